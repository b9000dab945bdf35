package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRealServers talks to the npm reference servers pinned in tools/mcp
// (make mcp-tools installs them): server-everything over stdio and over
// streamable HTTP on 127.0.0.1, server-memory over stdio. Opt-in, as Node
// is slow to start: ROOK_TEST_REAL_MCP=1.
func TestRealServers(t *testing.T) {
	if os.Getenv("ROOK_TEST_REAL_MCP") == "" {
		t.Skip("set ROOK_TEST_REAL_MCP=1 to run against the npm reference servers")
	}
	mods, err := filepath.Abs("../../tools/mcp/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(mods, ".bin", "node")
	everything := filepath.Join(mods, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	memory := filepath.Join(mods, "@modelcontextprotocol", "server-memory", "dist", "index.js")
	for _, p := range []string{node, everything, memory} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v (make mcp-tools installs the servers)", err)
		}
	}
	o := testOptions()
	o.Limits.ConnectTimeout = 30 * time.Second
	o.Limits.Timeout = 30 * time.Second
	var stderr strings.Builder
	o.Stderr = &stderr

	check := func(t *testing.T, spec Spec, tool, args, want string) {
		c := connect(t, spec, o)
		tools, err := c.Tools(context.Background())
		if err != nil {
			t.Fatalf("tools: %v", err)
		}
		name, version := c.ServerInfo()
		t.Logf("%s %s, %s, %d tools: %s", name, version, c.Negotiated(), len(tools), names(tools))
		r, err := c.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("call %s: %v", tool, err)
		}
		b, _ := json.Marshal(r)
		if !strings.Contains(string(b), want) {
			t.Fatalf("call %s: %s", tool, b)
		}
		t.Logf("call %s: %s", tool, b)
	}

	t.Run("everything/stdio", func(t *testing.T) {
		spec := Spec{Command: node, Args: []string{everything, "stdio"}}
		check(t, spec, "get-sum", `{"a":2,"b":3}`, "The sum of 2 and 3 is 5.")
		check(t, spec, "get-structured-content", `{"location":"New York"}`, `"Structured":{`)
		check(t, spec, "get-tiny-image", `{}`, `"image/png"`)
	})
	t.Run("everything/http", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(node, everything, "streamableHttp")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		for deadline := time.Now().Add(20 * time.Second); ; {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the server did not listen")
			}
			time.Sleep(100 * time.Millisecond)
		}
		check(t, Spec{URL: url}, "echo", `{"message":"hi"}`, "Echo: hi")
	})
	t.Run("memory/stdio", func(t *testing.T) {
		spec := Spec{Command: node, Args: []string{memory}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
		check(t, spec, "create_entities", `{"entities":[{"name":"inbox","entityType":"note","observations":["first"]}]}`, "inbox")
		check(t, spec, "read_graph", `{}`, "first")
	})
}
