//go:build linux

package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A request written whole but for its newline may have been read whole by
// a program that reads JSON values, not lines: the call is not said as
// never sent. Nor as a server that went away or could not be reached
// (which marked it unreachable): the program was reached, and the call's
// time ran out while it did not read; rook ended it, as after any partial
// write. An empty pipe takes its size (F_GETPIPE_SZ) from a program that
// reads nothing; the request here is one byte longer with its newline.
func TestStdioAllButTheNewline(t *testing.T) {
	old := stdioGrace
	stdioGrace = 100 * time.Millisecond    // sleep ignores the end of its input
	t.Cleanup(func() { stdioGrace = old }) // after the program is ended
	// The file read is made once the initialized notification is read:
	// the pipe is empty then.
	read := filepath.Join(t.TempDir(), "read")
	script := `read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'; read l; : > "$1"; exec sleep 20`
	o := testOptions()
	o.Limits.CallTimeout = 2 * time.Second // time for the write to begin, on a loaded machine
	c := connect(t, Spec{Command: "/bin/sh", Args: []string{"-c", script, "sh", read}}, o)
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(read); err == nil {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the program did not read the initialized notification")
		}
	}
	size := 0
	raw, err := c.tr.(*stdioTransport).in.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) {
		n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETPIPE_SZ, 0)
		if errno == 0 {
			size = int(n)
		}
	})
	if size == 0 {
		t.Fatal("could not read the pipe's size")
	}
	frame := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"q":""}}}` + "\n"
	args := json.RawMessage(`{"q":"` + strings.Repeat("x", size+1-len(frame)) + `"}`)
	_, err = c.Call(context.Background(), "t", args)
	f := wantFailure(t, err, ProtocolError)
	if strings.Contains(f.Msg, "did not run") {
		t.Fatalf("says a request the program may have read whole did not run: %q", f.Msg)
	}
	for _, untrue := range []string{"went away", "could not be reached"} {
		if strings.Contains(f.Msg, untrue) {
			t.Fatalf("says %q of a program rook ended when the call's time ran out: %q", untrue, f.Msg)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("not a timeout: %v", err)
	}
	wantContains(t, f.Msg, "2s", "final newline", "may have run", "rook ended the program", "--timeout allows more")
	// The connection is ended, as after any partial write.
	_, err = c.Call(context.Background(), "t", nil)
	wantContains(t, wantFailure(t, err, Unreachable).Msg, "only partly written")
}
