package cli

import (
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
