//go:build unix

package vfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/asnobody"
	"github.com/rookhq/rook/internal/vfs"
)

// A file written atomically with an Owner gets that owner and group
// before it takes the name (root replacing a user's file leaves it the
// user's); when it cannot (not root), the write fails with an
// *vfs.OwnerError and the old file stays as it was.
func TestWriteFilesAtomicKeepsTheOwner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	mustNil(t, os.WriteFile(path, []byte("old"), 0o640))
	fi, err := os.Stat(path)
	mustNil(t, err)
	own := vfs.OwnerOf(fi)
	// Its own owner: no chown needed, whoever runs this.
	mustNil(t, vfs.OS.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "f.json", Data: []byte("same"), Owner: own}}, 0o640))

	other := vfs.Ownership{UID: 65534, GID: 65534} // nobody
	if own.UID == other.UID {
		other = vfs.Ownership{UID: 0, GID: 0}
	}
	err = vfs.OS.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "f.json", Data: []byte("new"), Owner: &other}}, 0o640)
	fi, serr := os.Stat(path)
	mustNil(t, serr)
	st := fi.Sys().(*syscall.Stat_t)
	b, _ := os.ReadFile(path)
	if os.Geteuid() == 0 {
		if err != nil || int(st.Uid) != other.UID || int(st.Gid) != other.GID || string(b) != "new" || fi.Mode().Perm() != 0o640 {
			t.Fatalf("as root: %v; %s owned by %d:%d mode %v holds %q", err, path, st.Uid, st.Gid, fi.Mode().Perm(), b)
		}
		// Refused as nobody, who may not give a file away.
		if !asnobody.Run(t, "^"+regexp.QuoteMeta(t.Name())+"$", []string{t.Name()}) {
			t.Fatal("asnobody.Run says the caller is not root")
		}
		return
	}
	var oe *vfs.OwnerError
	if !errors.As(err, &oe) || oe.Owner != other || string(b) != "same" {
		t.Fatalf("not root: %v; the file holds %q", err, b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

// MkdirAllOwned gives the directories it makes (and only those) the owner
// and group asked for: root making a client's configuration directory in
// a user's home leaves it the user's. MemFS has no owners: it makes them.
func TestMkdirAllOwnedGivesWhatItMakes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	base := t.TempDir()
	own := vfs.Ownership{UID: 65534, GID: 65534} // nobody
	mustNil(t, vfs.OS.MkdirAllOwned(filepath.Join(base, "a", "b"), 0o700, &own))
	for p, want := range map[string]vfs.Ownership{base: {UID: 0, GID: 0}, filepath.Join(base, "a"): own, filepath.Join(base, "a", "b"): own} {
		fi, err := os.Stat(p)
		mustNil(t, err)
		if got := *vfs.OwnerOf(fi); got != want || p != base && fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: owned by %v mode %v, want %v", p, got, fi.Mode().Perm(), want)
		}
	}
	m := vfs.NewMem()
	mustNil(t, m.MkdirAllOwned("/x/y", 0o700, &own))
	if fi, err := m.Stat("/x/y"); err != nil || !fi.IsDir() {
		t.Fatalf("MemFS: %v", err)
	}
}
