package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// `session rm` of a fork read every session's metadata twice: once for
// the removal (the index of who copied what from whom), once more to
// list the children it keeps (Log.Children). With thousands of sessions
// that is thousands of files opened again. It reads each once now, and
// still lists the children.
func TestSessionRmReadsEachMetadataOnce(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	rook := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if Main(append([]string{"--home", home, "-C", dir}, args...), strings.NewReader("a body"), &out, &errb) != 0 {
			t.Fatalf("rook %v: %s", args, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	rook("init")
	parent := rook("session", "new", "--title", "parent")
	rook("session", "append", parent, "--kind", "user")
	rook("session", "append", parent, "--kind", "user")
	fork := rook("session", "fork", parent, "--at", "1")
	child := rook("session", "fork", fork, "--at", "1") // the fork's own fork: kept
	const bystanders = 5
	for i := 0; i < bystanders; i++ {
		rook("session", "new", "--title", "bystander")
	}

	reads := map[string]int{}
	var out bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &bytes.Buffer{}, Home: home, Cwd: dir, JSON: true, FS: onOpen{vfs.OS, func(name string) {
		if id, ok := strings.CutSuffix(filepath.Base(name), ".meta"); ok {
			reads[id]++
		}
	}}}
	if err := (&SessionRmCmd{ID: fork}).Run(e); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kept []string `json:"children_kept"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got.Kept) != 1 || got.Kept[0] != child {
		t.Errorf("children kept %v, want [%s]", got.Kept, child)
	}
	bystanderReads := 0
	for id, n := range reads {
		if id != parent && id != fork && id != child {
			bystanderReads++
			if n > 1 {
				t.Errorf("bystander %s: its metadata opened %d times, want once", id, n)
			}
		}
	}
	if bystanderReads != bystanders {
		t.Errorf("%d bystanders' metadata opened, want %d: %v", bystanderReads, bystanders, reads)
	}
}
