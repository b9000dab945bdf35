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
