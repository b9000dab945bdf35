package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// TestBodySpoolStoreRefuses: a spool that cannot be made because the
// store cannot be written (its events/ gone, not this user's to write,
// on a read-only filesystem) is said as the store's failure, with the
// store's advice. Said as the spool's, it told the user to "give the body
// as a regular FILE", and the append of that FILE then failed on the same
// store; the events/ gone was "no such file or directory" of the spool,
// where any other append says the sessions' directory is missing.
func TestBodySpoolStoreRefuses(t *testing.T) {
	const home = "/home/u/.rook"
	for _, c := range []struct {
		name string
		err  error // of the spool's create; nil: events/ removed
		want string
	}{
		{"permission", syscall.EACCES, "permission denied: check the permissions of " + home},
		{"read-only", syscall.EROFS, "read-only file system"},
		{"no events dir", nil, "the sessions' directory " + filepath.Join(home, cas.EventsDir) + " is missing: put it back"},
	} {
		fsys := newMemStore(t, home, 0)
		if c.err == nil {
			if err := fsys.Remove(filepath.Join(home, cas.EventsDir)); err != nil {
				t.Fatal(err)
			}
		}
		fsys.SetHook(func(op vfs.Op, path string) error {
			if c.err != nil && op == vfs.OpOpen && strings.Contains(path, ".append-body") {
				return c.err
			}
			return nil
		})
		e := &Env{FS: fsys, Home: home}
		_, err := e.bodySpool()
		if err == nil {
			t.Fatalf("%s: spool made", c.name)
		}
		msg := explain(readErr(err), home)
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "regular FILE") || strings.Contains(msg, "read input") {
			t.Errorf("%s: %s\nwant %q, and no word of a regular FILE", c.name, msg, c.want)
		}
	}
}

// TestBodySpoolLeftSwept: a spool file a crash left in events/ (its
// remove failing here stands for the crash between its create and its
// remove) is one `rook store gc` removes, as storage.md says: checked on
// the name bodySpool makes, not on one written out by hand.
func TestBodySpoolLeftSwept(t *testing.T) {
	const home = "/home/u/.rook"
	fsys := newMemStore(t, home, 0)
	var made string
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && strings.Contains(path, ".append-body") {
			made = path
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := (&Env{FS: fsys, Home: home}).bodySpool(); err == nil {
		t.Fatal("spool made with its remove failing")
	}
	fsys.SetHook(nil)
	if _, err := fsys.Stat(made); made == "" || err != nil {
		t.Fatalf("no spool file left (%q): %v", made, err)
	}
	r, err := agent.Open(home, agent.Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.GC(0, false, nil, nil)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(made); rep.TempFiles != 1 || err == nil {
		t.Fatalf("gc removed %d temporary file(s); %s left: %v", rep.TempFiles, made, err == nil)
	}
}

// TestStdinRegularFileNoSpool: standard input redirected from a regular
// file (`< body.bin`) is read by its size, from where it stands, into one
// buffer: no spool, whose copy of it needed as much free space again on
// the store's disk (a full one said "free space there" of a body the
// limit then refused), and one past the limit is refused before it is
// read.
func TestStdinRegularFileNoSpool(t *testing.T) {
	lowBody(t, 1000)
	lowSpill(t, 100)
	const home = "/home/u/.rook"
	fsys := newMemStore(t, home, 0)
	fsys.SetHook(func(op vfs.Op, path string) error {
		if strings.Contains(path, ".append-body") {
			return syscall.ENOSPC
		}
		return nil
	})
	src := make([]byte, 1001)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	path := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	stdin := func(at int64) *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Seek(at, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// 1001 bytes from offset 1: 1000, the limit; from 0, one past it,
	// refused without reading.
	b, err := readInput(&Env{FS: fsys, Home: home, Stdin: stdin(1), Stderr: io.Discard}, "-", "the event's body")
	if err != nil || !bytes.Equal(b[cas.ObjectRoom:], src[1:]) {
		t.Fatalf("stdin of a regular file at the limit: %d bytes, %v", len(b)-cas.ObjectRoom, err)
	}
	f := stdin(0)
	_, err = readInput(&Env{FS: fsys, Home: home, Stdin: f, Stderr: io.Discard}, "-", "the event's body")
	if err == nil || !strings.Contains(err.Error(), "standard input holds more than the 1000 B") {
		t.Fatalf("stdin of a regular file past the limit: %v", err)
	}
	if at, _ := f.Seek(0, io.SeekCurrent); at != 0 {
		t.Fatalf("stdin past the limit by its size: %d bytes read to refuse it", at)
	}
}

// TestBodySpoolQuotaAndLayout: a spool whose write is refused for the
// user's disk quota (EDQUOT) gets the advice a full disk's (ENOSPC) does,
// free space there; and a spool that cannot be made because the store's
// events/ is a file (ENOTDIR) is the store's layout damaged, said as the
// store's with what to do, not "give the body as a regular FILE" (whose
// append fails on the same events/).
func TestBodySpoolQuotaAndLayout(t *testing.T) {
	lowSpill(t, 100)
	const home = "/home/u/.rook"
	fsys := newMemStore(t, home, 0)
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.Contains(path, ".append-body") {
			return syscall.EDQUOT
		}
		return nil
	})
	e := &Env{FS: fsys, Home: home}
	_, err := readBody(onlyReader{bytes.NewReader(make([]byte, 500))}, -1, e.bodySpool)
	msg := explain(readErr(err), home)
	if !strings.Contains(msg, "quota exceeded: free space there, or give the body as a regular FILE") {
		t.Errorf("spool over the quota: %s\nwant the free space advice", msg)
	}
	fsys.SetHook(nil)

	events := filepath.Join(home, cas.EventsDir)
	if err := fsys.Remove(events); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(events, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = readBody(onlyReader{bytes.NewReader(make([]byte, 500))}, -1, e.bodySpool)
	if err == nil {
		t.Fatal("spool made with events/ a file")
	}
	msg = explain(readErr(err), home)
	for _, want := range []string{events + " is a file, not a directory", "layout is damaged", "move the file aside"} {
		if !strings.Contains(msg, want) {
			t.Errorf("spool with events/ a file: %s\nwant %q", msg, want)
		}
	}
	if strings.Contains(msg, "regular FILE") || strings.Contains(msg, "read input") {
		t.Errorf("spool with events/ a file: %s\nwant no word of a regular FILE", msg)
	}
}
