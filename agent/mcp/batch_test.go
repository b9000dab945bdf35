package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// serveRaw feeds lines to a server and returns its output lines, undecoded:
// a batch's reply is a JSON array, not one reply object.
func serveRaw(t *testing.T, opts Options, lines ...string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := Serve(context.Background(), strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, opts); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var got []string
	for _, l := range strings.SplitAfter(out.String(), "\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			t.Fatalf("reply without its newline: %q", l)
		}
		got = append(got, strings.TrimSuffix(l, "\n"))
	}
	return got
}

// decodeBatch decodes a batch's reply line into its replies.
func decodeBatch(t *testing.T, line string) []reply {
	t.Helper()
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(line), &raws); err != nil {
		t.Fatalf("not a batch reply: %q: %v", line, err)
	}
	var out []reply
	for _, raw := range raws {
		out = append(out, decodeReply(t, append(raw, '\n')))
	}
	return out
}

func initLine(version string) string {
	return requestLine(1, "initialize", map[string]any{"protocolVersion": version, "clientInfo": map[string]any{"name": "cursor"}})
}

// Revision 2025-03-26 added JSON-RPC batches, and a server MUST support
// receiving them ("MCP implementations MAY support sending JSON-RPC
// batches, but MUST support receiving JSON-RPC batches"); 2025-06-18
// removed them again. A 2025-03-26 session's batch is answered with one
// array of the requests' replies, in order, notifications left out.
func TestBatchIn20250326(t *testing.T) {
	f := newFixture(t)
	save := func(id int, content string) string {
		return requestLine(id, "tools/call", map[string]any{"name": "append_to_inbox", "arguments": map[string]any{"content": content}})
	}
	batch := "[" + strings.Join([]string{
		save(2, "first"),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		requestLine(3, "tools/list", nil),
		save(4, ""), // refused: its own error, the others go on
		requestLine(5, "initialize", map[string]any{"protocolVersion": "2025-03-26"}),
		`{"jsonrpc":"2.0","id":6}`,
		`7`,
		save(8, "second"),
	}, ",") + "]"
	got := serveRaw(t, f.opts(), initLine("2025-03-26"), batch,
		`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, // notifications only: no reply at all
		`[]`,
		requestLine(9, "ping", nil))
	if len(got) != 4 {
		t.Fatalf("%d reply lines, want 4 (initialize, the batch, [], ping):\n%s", len(got), strings.Join(got, "\n"))
	}
	replies := decodeBatch(t, got[1])
	wantIDs := []string{"2", "3", "4", "5", "6", "null", "8"}
	wantCodes := []int{0, 0, -32004, -32600, -32600, -32600, 0}
	if len(replies) != len(wantIDs) {
		t.Fatalf("%d replies in the batch, want %d: %s", len(replies), len(wantIDs), got[1])
	}
	for i, r := range replies {
		if string(r.ID) != wantIDs[i] || r.code() != wantCodes[i] {
			t.Errorf("batch reply %d: id %s code %d (%+v), want id %s code %d", i, r.ID, r.code(), r.Error, wantIDs[i], wantCodes[i])
		}
	}
	if r := replies[3]; r.Error != nil && !strings.Contains(r.Error.Message, "batch") {
		t.Errorf("initialize in a batch: %q should say it cannot be batched", r.Error.Message)
	}
	// An empty batch is one invalid request (JSON-RPC 2.0), not an array.
	if r := decodeReply(t, []byte(got[2]+"\n")); r.code() != -32600 || string(r.ID) != "null" {
		t.Errorf("empty batch: %s", got[2])
	}
	if r := decodeReply(t, []byte(got[3]+"\n")); r.Error != nil || string(r.ID) != "9" {
		t.Errorf("after the batches: %s", got[3])
	}
	saves := pendingSaves(t, f)
	if len(saves) != 2 || saves[0].Content != "first" || saves[1].Content != "second" {
		t.Errorf("saves %+v, want first and second", saves)
	}
}

// Other revisions have no batches, and before initialize the revision is
// not known: a batch is one invalid request that says which revision takes
// batches, and nothing in it runs.
func TestBatchRefusedOutside20250326(t *testing.T) {
	batch := `[` + requestLine(2, "tools/call", map[string]any{"name": "append_to_inbox", "arguments": map[string]any{"content": "x"}}) + `]`
	for _, version := range []string{"", "2024-11-05", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t)
			lines := []string{batch}
			if version != "" {
				lines = []string{initLine(version), batch}
			}
			got := serveRaw(t, f.opts(), lines...)
			r := decodeReply(t, []byte(got[len(got)-1]+"\n"))
			if r.code() != -32600 || string(r.ID) != "null" || !strings.Contains(r.Error.Message, "2025-03-26") {
				t.Errorf("batch: %s, want -32600 naming 2025-03-26", got[len(got)-1])
			}
			if saves := pendingSaves(t, f); len(saves) != 0 {
				t.Errorf("saves %+v, want none", saves)
			}
		})
	}
}

// In a 2025-03-26 session a batch is answered as one array of its
// requests' replies, in order, notifications skipped; a save with an
// argument the tool does not take is refused in it (-32004).
func TestBatchReplyIsOneArray(t *testing.T) {
	f := newFixture(t)
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","clientInfo":{"name":"zed"}}}` + "\n" +
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"hi","extra":1}}}]` + "\n"
	var out bytes.Buffer
	if err := Serve(context.Background(), strings.NewReader(in), &out, f.opts()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], `[{"jsonrpc":"2.0","id":4,"result":{}},{"jsonrpc":"2.0","id":5,"error":{"code":-32004,`) {
		t.Fatalf("out %q", out.String())
	}
}
