package proc

import (
	"os"
	"os/exec"
	"testing"
)

func TestRunning(t *testing.T) {
	if !Running(os.Getpid()) {
		t.Error("this process is not running")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	// Waited for and reaped: gone (unless its pid was taken again since,
	// which a system hands out in turn, not at once).
	if Running(cmd.Process.Pid) {
		t.Errorf("pid %d, exited, is running", cmd.Process.Pid)
	}
}
