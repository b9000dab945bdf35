//go:build unix

package mcpclient

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup starts the program in a process group of its own, so that
// signals reach what it started too (npx starts node, say).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to the program's process group, and to the program.
func signalGroup(p *os.Process, sig syscall.Signal) {
	syscall.Kill(-p.Pid, sig)
	p.Signal(sig)
}
