package agent

import (
	"os"
	"strings"
	"testing"
)

// A session whose workspace is gone (moved, renamed, deleted) must not
// record every path a tool names as absent, nor have a rewind recreate the
// workspace: the capture held nothing of the files the tool was about to
// change, and a rewind to before it, once the workspace was back, would
// delete them. Both refuse and say why.
func TestCaptureAndRewindRefuseAWorkspaceThatIsGone(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "one\n"})
	if _, _, err := r.CaptureSession(id, []string{"a.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ws+"/a.txt", []byte("two\n"), 0o644)
	if err := os.Rename(ws, ws+".moved"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.CaptureSession(id, []string{"a.txt"}, "edit", DefaultLimits); err == nil || !strings.Contains(err.Error(), "not on this disk") {
		t.Fatalf("capture in a workspace that is gone: %v", err)
	}
	if _, err := r.Rewind(id, 0, false); err == nil || !strings.Contains(err.Error(), "not on this disk") {
		t.Fatalf("rewind in a workspace that is gone: %v", err)
	}
	if _, err := os.Lstat(ws); !os.IsNotExist(err) {
		t.Fatalf("the workspace was recreated: %v", err)
	}
}
