package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// gc waited for ever on a ref that is a named pipe (and read without end a
// ref that is a link to /dev/zero), holding the writer lock: walkRefs read
// every file under refs/ with no look at its type or size. A file that is
// not a regular file is refused at once, naming it, as config.toml is
// "never waited on nor read without end".
func TestGCNeverWaitsOnARefThatIsANamedPipe(t *testing.T) {
	r, _, _ := newWorkspace(t)
	dir := filepath.Join(r.home, RefsDir, "checkpoints")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "served")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.GC(0, true, nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("gc took a named pipe under refs/ for a ref and planned a sweep: want it refused, naming the file")
		}
	case <-time.After(3 * time.Second):
		// Let the blocked gc go: open the pipe's other end and close it.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("gc still waiting after 3s on a named pipe under refs/checkpoints (a real gc holds the writer lock all that time): a file that is not a regular file must be refused at once, never waited on")
	}
}

// Every reader of refs/ (gc, verify, checkpoint ls, restore) reads a ref
// through readRefFile: a named pipe, a link to /dev/zero and a link to a
// directory are refused at once, each named with what it is and what to
// do; gc refuses to sweep, ls lists the other checkpoints, verify reports
// each as a problem and goes on.
func TestEveryRefReaderRefusesAFileThatIsNoRegularOne(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "kept\n"})
	if _, _, err := r.CreateCheckpoint("good", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(r.home, RefsDir, "checkpoints")
	cases := []struct {
		name, what string
		make       func(p string) error
	}{
		{"pipe", "is a named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"zero", "is a character device", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"dir", "is a directory", func(p string) error { return os.Symlink(t.TempDir(), p) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			if err := c.make(p); err != nil {
				t.Skip("cannot make it here:", err)
			}
			defer os.Remove(p)
			type result struct {
				what string
				err  error
			}
			done := make(chan result, 4)
			go func() {
				_, err := r.GC(0, true, nil, nil)
				done <- result{"gc", err}
				refs, err := r.Checkpoints()
				if u := (*UnreadableRefsError)(nil); errors.As(err, &u) {
					err = errors.Join(u.Errs...) // what ls says of each file
				}
				if len(refs) != 1 || refs[0].Name != "good" {
					err = errors.Join(err, errors.New("ls did not list the good checkpoint"))
				}
				done <- result{"ls", err}
				_, err = r.readRef(c.name)
				done <- result{"restore's read", err}
				rep, err := r.VerifyReferences(nil)
				if err == nil {
					for _, pr := range rep.Problems {
						err = errors.Join(err, errors.New(pr.Ref+" "+pr.Reason))
					}
				}
				done <- result{"verify", err}
			}()
			for range 4 {
				select {
				case got := <-done:
					if got.err == nil {
						t.Fatalf("%s: no error for refs/checkpoints/%s", got.what, c.name)
					}
					msg := got.err.Error()
					t.Logf("%s: %s", got.what, msg)
					if !strings.Contains(msg, c.name) || !strings.Contains(msg, c.what) || !strings.Contains(msg, "remove") {
						t.Errorf("%s: %v\nwant the file named, %q, and the way out", got.what, msg, c.what)
					}
					if got.what == "gc" && !strings.Contains(msg, "gc refuses to sweep") {
						t.Errorf("gc: %v: want it to refuse to sweep", msg)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a reader of refs/ still waiting after 5s: it must refuse the file at once")
				}
			}
		})
	}
}

// A ref larger than any ref holds is refused, not read whole.
func TestReadRefFileRefusesAFileLargerThanAnyRef(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxRefBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = readRefFile(vfs.OS, p)
	if rr := (*RefRefusedError)(nil); !errors.As(err, &rr) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want a RefRefusedError saying it is too large", err)
	}
}
