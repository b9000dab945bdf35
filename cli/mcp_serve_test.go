package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
)

// TestMcpServeSignalIsANormalEnd runs `rook mcp serve` as a client does,
// saves, and sends SIGTERM (the MCP spec's end of a stdio server; rook's
// own client sends it 2 s after closing stdin) or SIGINT (Ctrl-C in the
// client's terminal) with a save just sent: rook said "rook: terminated:
// stopped" on stderr, which clients pass on, and exited 143. Now it exits
// 0 saying nothing, and every save it answered is in the inbox.
func TestMcpServeSignalIsANormalEnd(t *testing.T) {
	if home := os.Getenv("ROOK_TEST_MCP_SERVE_HOME"); home != "" {
		os.Exit(Main([]string{"--home", home, "mcp", "serve"}, os.Stdin, os.Stdout, os.Stderr))
	}
	if testing.Short() {
		t.Skip("subprocess test")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			home := filepath.Join(dir, "store")
			var out, errb bytes.Buffer
			// -C: another test may have left the working directory removed.
			if Main([]string{"--home", home, "-C", dir, "init"}, strings.NewReader(""), &out, &errb) != 0 {
				t.Fatal(errb.String())
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestMcpServeSignalIsANormalEnd$")
			cmd.Env = append(os.Environ(), "ROOK_TEST_MCP_SERVE_HOME="+home)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
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
			send := func(line string) {
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			save := func(id int) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"save %d","title":"t"}}}`, id, id)
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}}}`)
			if _, err := replies.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			acked := 0
			for id := 2; id <= 4; id++ {
				send(save(id))
				if r, err := replies.ReadString('\n'); err != nil || !strings.Contains(r, "Saved to Rook inbox") {
					t.Fatalf("save %d: %q %v", id, r, err)
				}
				acked++
			}
			// One more save, and the signal right behind it: answered or
			// not, the server ends normally.
			send(save(5))
			cmd.Process.Signal(sig)
			if r, _ := replies.ReadString('\n'); strings.Contains(r, "Saved to Rook inbox") {
				acked++
			}
			err = cmd.Wait()
			if err != nil || stderr.Len() != 0 {
				t.Fatalf("after %v: %v, stderr %q; want exit 0 and nothing said", sig, err, stderr.String())
			}
			r, err := agent.Open(home, agent.Options{Writable: true}) // takes the spool in
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			list, err := r.Inboxes()
			if err != nil || len(list) != 1 || list[0].Saves < acked || list[0].Saves > 4 {
				t.Fatalf("inboxes %+v %v; want the %d save(s) answered", list, err, acked)
			}
		})
	}
}

// TestMcpServeSecondSignalEndsIt: a server whose replies a client stopped
// reading is stuck writing one; the first SIGTERM only asks it to end
// between messages, so it stayed until a SIGKILL. A second signal ends it
// at once, as without the handler.
func TestMcpServeSecondSignalEndsIt(t *testing.T) {
	if home := os.Getenv("ROOK_TEST_MCP_SERVE_STUCK_HOME"); home != "" {
		os.Exit(Main([]string{"--home", home, "mcp", "serve"}, os.Stdin, os.Stdout, os.Stderr))
	}
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	var out, errb bytes.Buffer
	if Main([]string{"--home", home, "-C", dir, "init"}, strings.NewReader(""), &out, &errb) != 0 {
		t.Fatal(errb.String())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMcpServeSecondSignalEndsIt$")
	cmd.Env = append(os.Environ(), "ROOK_TEST_MCP_SERVE_STUCK_HOME="+home)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe() // never read: the pipe fills
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var sent atomic.Int64
	go func() {
		// More replies than a pipe holds (64 KiB on Linux); the writes of
		// the requests themselves block once the server is stuck.
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n")
		for id := 2; id < 100000; id++ {
			if _, err := fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", id); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	go func() { done <- cmd.Wait() }()
	// Stuck: it stopped reading requests (none sent for half a second).
	for last, quiet := int64(-1), 0; quiet < 5; {
		select {
		case err := <-done:
			t.Fatalf("ended before any signal: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if n := sent.Load(); n == last && n > 0 {
			quiet++
		} else {
			last, quiet = n, 0
		}
	}
	if sent.Load() >= 100000-2 {
		t.Fatal("the server read every request: never stuck")
	}
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return // ended
		case <-tick.C:
			cmd.Process.Signal(syscall.SIGTERM)
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatal("still running after 20 s of SIGTERMs")
		}
	}
}
