package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A call whose time ran out while its request was only partly written to
// a program that had stopped reading left the connection in use: the next
// message was written right after the partial one, and the program, once
// it read again, read one line of garbage holding both. After a partial
// write the program is ended (its stdin closed first), and the next call
// says the connection is closed instead of writing anything.
func TestStdioPartialWriteEndsTheConnection(t *testing.T) {
	dir := t.TempDir()
	got, resume := filepath.Join(dir, "read"), filepath.Join(dir, "resume")
	// Answers initialize, reads the initialized notification, stops
	// reading (a large call fills the pipe, and its write runs out of
	// time part way) until the file resume exists, then keeps all it
	// reads until its stdin ends.
	script := `read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'; read l; while [ ! -e "$2" ]; do sleep 0.05; done; cat > "$1"`
	o := testOptions()
	o.Limits.CallTimeout = 2 * time.Second // time for the write to begin, on a loaded machine
	c := connect(t, Spec{Command: "/bin/sh", Args: []string{"-c", script, "sh", got, resume}}, o)
	st := c.tr.(*stdioTransport)
	args := json.RawMessage(`{"q":"` + strings.Repeat("x", 4<<20) + `"}`)
	_, err := c.Call(context.Background(), "first", args)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "was not sent", "the tool did not run", "only part of it")

	if err := os.WriteFile(resume, nil, 0o600); err != nil { // the program reads again
		t.Fatal(err)
	}
	_, err = c.Call(context.Background(), "second", nil)
	wantContains(t, wantFailure(t, err, Unreachable).Msg, "connection to the server was closed", "only partly written")

	select {
	case <-st.exited:
	case <-time.After(stdioGrace + time.Second):
		t.Fatal("the program was not ended after the partial write")
	}
	if st.waitErr != nil {
		t.Fatalf("the program did not end on the end of its input: %v", st.waitErr)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"second"`) {
		t.Fatalf("the second call was written after the partial first one: the program read %q", b[max(0, len(b)-200):])
	}
	if len(b) == 0 || strings.Contains(string(b), "\n") {
		t.Fatalf("the program read %d bytes, want part of one line", len(b))
	}
}

// A program that exits part way through reading a request (it crashed,
// or refuses a line so long) makes the write fail, not run out of time:
// the call says why the program ended (its exit, the end of its stderr),
// not that rook ended it, which it did not.
func TestStdioPartWrittenToAProgramThatExits(t *testing.T) {
	script := `read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'; read l; head -c 1000 >/dev/null; echo "boom: the line is too long" >&2; exit 3`
	o := testOptions()
	o.Limits.CallTimeout = 10 * time.Second
	c := connect(t, Spec{Command: "/bin/sh", Args: []string{"-c", script}}, o)
	args := json.RawMessage(`{"q":"` + strings.Repeat("x", 4<<20) + `"}`)
	_, err := c.Call(context.Background(), "t", args)
	f := wantFailure(t, err, Unreachable)
	if strings.Contains(f.Msg, "rook ended") {
		t.Fatalf("says rook ended a program that exited on its own: %q", f.Msg)
	}
	wantContains(t, f.Msg, "exit status 3", "boom: the line is too long")
}

// A call cancelled (an interrupt) while its request is written to a
// program that does not read stops at once, not at its deadline (only
// the deadline stopped the write): it is said as given up before it was
// sent whole, the tool did not run (NotSent), a cancellation, not a
// deadline, and the program, which had part of it, is ended.
func TestStdioCancelStopsAWriteUnread(t *testing.T) {
	script := `read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'; read l; exec sleep 20`
	o := testOptions()
	o.Limits.CallTimeout = time.Minute
	c := connect(t, Spec{Command: "/bin/sh", Args: []string{"-c", script}}, o)
	st := c.tr.(*stdioTransport)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	args := json.RawMessage(`{"q":"` + strings.Repeat("x", 4<<20) + `"}`)
	start := time.Now()
	_, err := c.Call(ctx, "t", args)
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the cancelled call ended after %v", d)
	}
	f := wantFailure(t, err, ProtocolError)
	wantContains(t, f.Msg, "given up before it was sent whole", "the tool did not run", "only part of it")
	if !NotSent(err) || !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NotSent %v, Canceled %v, DeadlineExceeded %v: want a call not sent, cancelled", NotSent(err), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded))
	}
	select {
	case <-st.exited:
	case <-time.After(2*stdioGrace + 2*time.Second):
		t.Fatal("the program was not ended after the partial write")
	}
}
