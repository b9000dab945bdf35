package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// TestKilledServerKeepsItsSave runs a real server process, saves a note,
// kills the server with SIGKILL the moment the reply arrives, and drains:
// the note is in the store, once.
func TestKilledServerKeepsItsSave(t *testing.T) {
	if home := os.Getenv("ROOK_TEST_MCP_HOME"); home != "" {
		err := Serve(context.Background(), os.Stdin, os.Stdout, Options{FS: vfs.OS, Home: home, Clock: clock.System})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("subprocess test")
	}
	home := filepath.Join(t.TempDir(), "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledServerKeepsItsSave$")
	cmd.Env = append(os.Environ(), "ROOK_TEST_MCP_HOME="+home)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	replies := bufio.NewReader(stdout)
	call := func(line string) string {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		reply, err := replies.ReadString('\n')
		if err != nil {
			t.Fatalf("no reply to %s: %v", line, err)
		}
		return reply
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}}}`)
	reply := call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"kept through a SIGKILL","title":"k"}}}`)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !strings.Contains(reply, `Saved to Rook inbox`) {
		t.Fatalf("reply %s", reply)
	}
	for range 2 { // a second writable open drains nothing more
		r, err := agent.Open(home, agent.Options{Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		list, err := r.Inboxes()
		if err != nil || len(list) != 1 || list[0].Saves != 1 || list[0].Client != "claude" {
			t.Fatalf("inboxes %+v %v", list, err)
		}
		evs, _ := r.Log.Read(list[0].Session, 0, 10)
		var note agent.InboxNote
		if b, err := r.Body(evs[0]); err != nil || json.Unmarshal(b, &note) != nil || note.Content != "kept through a SIGKILL" || evs[0].Kind != eventlog.KindNote {
			t.Fatalf("note %+v %v", note, err)
		}
		r.Close()
	}
}
