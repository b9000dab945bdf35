//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/asnobody"
)

// notRoot runs the calling top-level test as the user nobody when run as
// root (permissions do not bind root), as agent's notRoot does; false:
// it ran there, and the caller is done.
func notRoot(t *testing.T) bool {
	t.Helper()
	return !asnobody.Run(t, "^"+regexp.QuoteMeta(t.Name())+"$", []string{t.Name()})
}

// TestDoctorNamesASegmentItMayNotOpen: with a segment rook may not open
// (a `sudo rook` or a root hook made it; mode 000 here), `rook store put`
// failed "open segment ...: permission denied: check the permissions of H
// (`rook doctor`)", and doctor said "only you can read it" and "ok". It
// opens the files a writer opens (the lock, the index, the newest
// segment, the dictionaries) and names the one it may not, with the
// chmod, exit 1.
func TestDoctorNamesASegmentItMayNotOpen(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r := newCLIStore(t)
	big := filepath.Join(r.dir, "big.bin")
	if err := os.WriteFile(big, []byte(strings.Repeat("0123456789abcdef", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	r.must("", "store", "put", big) // 8 KiB: in the segment
	seg := filepath.Join(r.home, "segments", "00000001.seg")
	if err := os.Chmod(seg, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(seg, 0o600)
	code, _, errs := r.run("more bytes", "store", "put")
	if code != 1 || !strings.Contains(errs, "rook doctor") {
		t.Fatalf("put with the segment unreadable: exit %d: %s (want exit 1 sending the user to rook doctor)", code, errs)
	}
	code, out, errs := r.run("", "doctor")
	want := "rook: cannot open " + seg + ", the newest segment, which every command that writes appends to: permission denied: run `chmod 600 " + seg + "` as its owner\n"
	if code != 1 || !strings.Contains(errs, want) || strings.Contains(out, "\nok\n") {
		t.Errorf("doctor, which the put's error sends the user to: exit %d, want 1 and %q:\n%s%s", code, want, out, errs)
	}
	// The lock, likewise: not "the store is not writable by this user".
	lock := filepath.Join(r.home, "lock")
	if err := os.Chmod(lock, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(lock, 0o600)
	var v doctorReport
	_, out, _ = r.run("", "--json", "doctor")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(v.Unopenable) != 2 || v.Unopenable[0] != lock || v.Unopenable[1] != seg || len(v.Warnings) != 0 {
		t.Errorf("--json doctor: unopenable %q, warnings %q; want the lock and the segment, no warning", v.Unopenable, v.Warnings)
	}
}

// TestDoctorStoreOwnedByAnotherAccount: root (`sudo rook`) running doctor
// on a store another account owns was told "only you can read it", and
// every file rook then writes as root is root's, which the owner may not
// open. Doctor names the owner and warns; a file of another account than
// the owner's in the store is a problem, with the chown.
func TestDoctorStoreOwnedByAnotherAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown of the store to another account")
	}
	r := newCLIStore(t)
	err := filepath.Walk(r.home, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(r.home, &st); err != nil || st.Uid != 65534 {
		t.Fatalf("chown: %v, uid %d", err, st.Uid)
	}
	code, out, errs := r.run("", "doctor")
	if strings.Contains(out, "only you can read it") {
		t.Errorf("doctor of a store uid 65534 owns, run as uid %d, says only you can read it:\n%s%s", os.Geteuid(), out, errs)
	}
	if code != 0 || !strings.Contains(out, "warning    the store belongs to another account, ") || !strings.Contains(out, "uid 65534") {
		t.Errorf("doctor does not name the store's owner (uid 65534): exit %d\n%s%s", code, out, errs)
	}
	// Root writes a session in it: its files are root's.
	r.must("", "session", "new", "--title", "root's")
	code, out, errs = r.run("", "--json", "doctor")
	var v doctorReport
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 1 || v.Owner == nil || v.Owner.UID != 65534 || v.Owner.You || len(v.ForeignOwned) != 2 || !strings.Contains(errs, "of the store's files belong to another account than its owner") || !strings.Contains(errs, "chown -R ") {
		t.Errorf("doctor after root wrote a session: exit %d, owner %+v, foreign %q: %s", code, v.Owner, v.ForeignOwned, errs)
	}
}

// TestSessionPermissionDeniedNotSentToRm: a session whose .meta may not be
// read (a `sudo rook session new`, a chmod) was left out of `session ls
// --all` and doctor with the advice `rook session rm ID`, which deletes a
// session only its permissions kept from reading. Permission denied is
// named with what to do about the permissions, never rm; damage keeps
// its advice.
func TestSessionPermissionDeniedNotSentToRm(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r := newCLIStore(t)
	s := r.must("", "session", "new", "--title", "whole")
	r.must("", "session", "new", "--title", "other")
	meta := filepath.Join(r.home, "events", s+".meta")
	if err := os.Chmod(meta, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(meta, 0o600)
	for _, args := range [][]string{{"session", "ls", "--all"}, {"doctor"}} {
		code, out, errs := r.run("", args...)
		if code != 1 || !strings.Contains(errs, "permission denied") || !strings.Contains(errs, "`chmod 600 FILE`") {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		if strings.Contains(out+errs, "session rm") {
			t.Errorf("%v: a session only its permissions keep from reading is sent to `session rm`:\n%s", args, errs)
		}
	}
	// A damaged one beside it keeps the advice for damage, named apart.
	d := r.must("", "session", "new", "--title", "damaged")
	if err := os.WriteFile(filepath.Join(r.home, "events", d+".meta"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := r.run("", "session", "ls", "--all")
	if code != 1 || !strings.Contains(errs, "1 for want of permission ("+s+")") || !strings.Contains(errs, "the others ("+d+"): `rook store verify` lists every problem; `rook session rm ID` removes a session") {
		t.Errorf("session ls --all with one session denied, one damaged: exit %d: %s", code, errs)
	}
}

// TestDoctorStoreInitInADirectoryAnotherAccountMade: `rook init` takes an
// existing directory, so a user can make a store in one another account
// made for it (a provisioned volume, `sudo install -d -o svc /srv/rook`).
// Every file of that store is the user's: rook init wrote FORMAT, dict/,
// events/, index/, segments/, lock. Doctor took the store's owner from
// the home directory: run as root on a store root made in a directory
// nobody owns, it exited 1, "9 of the store's files belong to another
// account than its owner, nobody (uid 65534) ... run, as root, `chown -R
// nobody DIR`", and warned "run rook as its owner (`sudo -u nobody rook
// ...`)": advice that, followed, takes the store away from the account
// that made and uses it. The store's owner is FORMAT's (written once, by
// the init that made the store), the home left out of the foreign files
// when another account's: no foreign_owned problem, no chown, exit 0.
func TestDoctorStoreInitInADirectoryAnotherAccountMade(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a directory of another account that this one may write")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	r := &cliStore{t: t, dir: dir, home: home}
	r.must("", "init")
	r.must("", "session", "new", "--title", "mine")
	code, out, errs := r.run("", "--json", "doctor")
	var v doctorReport
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 0 || len(v.ForeignOwned) != 0 || strings.Contains(errs, "chown -R") {
		t.Errorf("doctor of a store whose every file this account wrote (its directory nobody's): exit %d, foreign_owned %q:\n%s", code, v.ForeignOwned, errs)
	}
	if v.Owner == nil || v.Owner.UID != os.Geteuid() || !v.Owner.You {
		t.Errorf("doctor names the store's owner %+v, want this account (FORMAT's)", v.Owner)
	}
	// A file of another account in it is still named, and the chown that
	// gives it back leaves the home, another account's, as it is.
	seg := filepath.Join(home, "segments")
	if err := os.Chown(seg, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	code, out, errs = r.run("", "--json", "doctor")
	v = doctorReport{}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 1 || len(v.ForeignOwned) != 1 || v.ForeignOwned[0] != seg || !strings.Contains(errs, "chown -R root ") || strings.Contains(errs, "chown -R root "+home+"`") || strings.Contains(errs, "chown root "+home+" ") {
		t.Errorf("doctor with segments/ nobody's: exit %d, foreign_owned %q:\n%s", code, v.ForeignOwned, errs)
	}
}

// A config.toml that is a named pipe with no writer made `rook doctor`,
// the command that says what is wrong with a store, wait for a writer for
// ever (as every command that reads the config did). Doctor names it as
// its config error, a problem, at once.
func TestDoctorNamesAConfigThatIsANamedPipe(t *testing.T) {
	r := newCLIStore(t)
	path := filepath.Join(r.home, "config.toml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := r.run("", "--json", "doctor")
		done <- result{code, out, errs}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close() // let the reader end
		}
		t.Fatal("doctor with a config.toml that is a named pipe still runs after 5s")
	}
	var v doctorReport
	if err := json.Unmarshal([]byte(res.out), &v); err != nil {
		t.Fatalf("exit %d: %v: %s%s", res.code, err, res.out, res.errs)
	}
	want := path + " is a named pipe, not a regular file: "
	if res.code != 1 || v.Config != path || !strings.HasPrefix(v.ConfigError, want) {
		t.Errorf("doctor: exit %d, config %q, config_error %q; want exit 1 and the config named, its error starting %q", res.code, v.Config, v.ConfigError, want)
	}
}
