//go:build unix

package agent

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// A config.toml that is a named pipe (a secrets tool that serves config
// files as FIFOs, or a stray mkfifo) with no writer made LoadConfig wait
// for a writer for ever: `rook store prune`, `maintain`, `gc`, `import`
// and `rook doctor` hung with no word (it was read with a plain blocking
// open, to its end). It is opened without waiting and refused, named, with
// what it is and what to do, at once.
func TestConfigNamedPipeIsRefusedNotWaitedOn(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ConfigFile)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadConfig(vfs.OS, home)
		done <- err
	}()
	select {
	case err := <-done:
		want := path + " is a named pipe, not a regular file: "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "remove it to use the defaults") {
			t.Fatalf("LoadConfig of a named pipe: %v, want an error starting %q, saying what to do", err, want)
		}
	case <-time.After(3 * time.Second):
		// Unblock the reader so the test binary can end.
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatalf("LoadConfig of a config.toml that is a named pipe with no writer still waits after 3s: every command reading the config (and doctor) hangs")
	}
}

// A config.toml linked to a device (/dev/zero) was read without a bound
// (prune reached 1.2 GB in 3 s); one that is a socket did not open ("no
// such device or address"). Both are refused for not being a regular
// file, naming what they are; a regular file larger than a config file
// can be (1 MiB) is refused unread; a link to a regular config file reads
// as before.
func TestConfigDeviceSocketOrHugeFileIsRefused(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ConfigFile)
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(vfs.OS, home)
	if want := path + " is a character device, not a regular file: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("config.toml linked to /dev/zero: %v, want an error starting %q", err, want)
	}

	os.Remove(path)
	// A socket's path must be short: a directory of its own under /tmp.
	sockDir, err := os.MkdirTemp("", "rk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	l, err := net.Listen("unix", filepath.Join(sockDir, ConfigFile))
	if err != nil {
		t.Skipf("listen on a unix socket: %v", err)
	}
	defer l.Close()
	_, err = LoadConfig(vfs.OS, sockDir)
	if want := filepath.Join(sockDir, ConfigFile) + " is a socket, not a regular file: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("config.toml that is a socket: %v, want an error starting %q", err, want)
	}

	big := append([]byte("[storage]\ngc_grace = \"1h\"\n"), []byte(strings.Repeat("# a comment line of the config\n", (maxConfigBytes/31)+1))...)
	if err := os.WriteFile(filepath.Join(home, "big.toml"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("big.toml", path); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(vfs.OS, home)
	if want := path + " is larger than 1 MiB, more than rook reads of a config file"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a config.toml of %d bytes: %v, want an error starting %q", len(big), err, want)
	}

	// Under the bound, through the link: read.
	if err := os.WriteFile(filepath.Join(home, "big.toml"), big[:maxConfigBytes], 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(vfs.OS, home)
	if err != nil || c.Storage.GCGrace.Duration != time.Hour {
		t.Errorf("a config.toml of 1 MiB, linked: %+v, %v; want gc_grace 1h", c.Storage, err)
	}
}

// A config.toml linked to /dev/null, the usual "no settings here" (a
// dotfiles checkout's, a CI job's), read as empty before config files
// were checked for being regular: the defaults. Refused as a device, it
// failed every store gc, prune and maintain (a cron job) with a reason
// untrue of /dev/null ("a device never ends"). It reads as the defaults.
func TestConfigLinkedToDevNullIsTheDefaults(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skipf("no %s", os.DevNull)
	}
	home := t.TempDir()
	if err := os.Symlink(os.DevNull, filepath.Join(home, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(vfs.OS, home)
	if err != nil {
		t.Fatalf("LoadConfig of a config.toml linked to /dev/null: %v, want the defaults", err)
	}
	if want := DefaultConfig(); cfg.Storage.GCGrace != want.Storage.GCGrace {
		t.Fatalf("gc_grace %v, want the default %v", cfg.Storage.GCGrace, want.Storage.GCGrace)
	}
}
