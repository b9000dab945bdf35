package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// onOpen is the OS file system calling fn when a file is opened.
type onOpen struct {
	vfs.FS
	fn func(name string)
}

func (o onOpen) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	o.fn(name)
	return o.FS.OpenFile(name, flag, perm)
}

// import --reread interrupted while it reads the files into its scratch
// store: the scratch store in $TMPDIR is removed before rook exits. It was
// left there (rook exits at once, running no defer), as big as what the
// files make, at every Ctrl-C.
func TestRereadInterruptedRemovesItsScratchStore(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	home := filepath.Join(dir, "store")
	var out, errb bytes.Buffer
	// -C: another test's -C may have left the working directory removed.
	if Main([]string{"--home", home, "-C", dir, "init"}, strings.NewReader(""), &out, &errb) != 0 {
		t.Fatal(errb.String())
	}
	src := filepath.Join(dir, "s1.jsonl")
	line := `{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-02T03:04:05Z","cwd":"/w","message":{"role":"user","content":"hello"}}` + "\n"
	if err := os.WriteFile(src, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	exit = func(int) {}
	t.Cleanup(func() { exit = os.Exit })
	interruptedAt := 0
	e := &Env{Stdout: &out, Stderr: &errb, Home: home, FS: onOpen{vfs.OS, func(name string) {
		if name != src || interruptedAt > 0 {
			return
		}
		// The scratch store's import reads the file: Ctrl-C.
		ents, _ := os.ReadDir(tmp)
		interruptedAt = len(ents)
		interrupted(os.Interrupt, &bytes.Buffer{}, false)
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("interrupted, rook left %s in $TMPDIR", ents[0].Name())
		}
	}}}
	// (The test's exit returns: the run goes on without its scratch store
	// and fails.)
	runReread(e, "claude-code", []string{src})
	if interruptedAt != 1 {
		t.Fatalf("the file was read with %d entries in $TMPDIR, want the scratch store's", interruptedAt)
	}
}
