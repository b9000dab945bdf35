//go:build !linux

package agent

// kernelFS: elsewhere than on Linux, no filesystem is known to be the
// kernel's (its mkdir errors are left to say themselves).
func kernelFS(dir string) bool { return false }
