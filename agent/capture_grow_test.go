package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A file written to while it is captured (a log, a build output) can be
// far larger when it is read than its Lstat said: the capture must still
// hold no more than its bounds, not read (and store) whatever the file
// has become.
func TestCaptureFileGrownPastTheBoundWhileCaptured(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	abs := filepath.Join(ws, "grow.log")
	writeTree(t, ws, tree{"grow.log": "small\n"})
	fi, err := os.Lstat(abs) // what the walk saw
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := r.newCapturer(ws, Limits{MaxFiles: 10, MaxBytes: 1 << 20, MaxFileBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	err = c.add("grow.log", fi)
	var le *LimitError
	if !errors.As(err, &le) || le.Flag != "--max-file-bytes" || le.Path != "grow.log" {
		t.Fatalf("capture of a file grown past --max-file-bytes: %v (captured %d bytes)", err, c.m.TotalBytes)
	}
	// Within the bound, a file grown since its Lstat is captured whole.
	c, err = r.newCapturer(ws, Limits{MaxFiles: 10, MaxBytes: 1 << 20, MaxFileBytes: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.add("grow.log", fi); err != nil || c.m.Files["grow.log"].Size != 4096 {
		t.Fatalf("capture: %v, %+v", err, c.m.Files["grow.log"])
	}
}
