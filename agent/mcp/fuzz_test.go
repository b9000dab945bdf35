package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
)

const fuzzInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"fuzz"}}}`

func serveLineSeeds() [][]byte {
	return [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"hello","title":"t"}}}`),
		[]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"","title":"\n"}}}`),
		[]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_to_inbox","arguments":"s"}}`),
		[]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`),
		[]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`),
		[]byte(`{"jsonrpc":"2.0","id":5,"method":"ping"}`),
		[]byte(`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{}}`),
		[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`),
		[]byte(`{"jsonrpc":"1.0","id":8,"method":"ping"}`),
		[]byte(`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`),
		[]byte(`[{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"b"}}},{"jsonrpc":"2.0","method":"x"},1,[],{"jsonrpc":"2.0","id":9,"method":"initialize"}]`),
		[]byte(`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`),
		[]byte(`[]`),
		[]byte(`{"jsonrpc":"2.0","id":{},"method":"ping"}`),
		[]byte(`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`),
		[]byte(`not json`),
		[]byte(""),
		[]byte("\r"),
	}
}

func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzServeLine": serveLineSeeds(), "FuzzIDScanner": idScannerSeeds()})
}

// FuzzServeLine: any line fed to a fresh, initialized server never panics
// and gets at most one reply, a JSON-RPC 2.0 line: one reply object, or in
// a 2025-03-26 session (the revision with batches) an array of them.
func FuzzServeLine(f *testing.F) {
	for _, s := range serveLineSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		// One input line: a newline in the input would make two messages.
		line = bytes.ReplaceAll(line, []byte("\n"), []byte(" "))
		for _, init := range []string{fuzzInit, fuzzInitBatches} {
			fsys := vfs.NewMem()
			clk := &clock.Fixed{T: time.Date(2026, 5, 12, 12, 0, 0, 0, time.UTC)}
			if _, err := cas.Init(fsys, clk, "/store"); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			in := strings.NewReader(init + "\n" + string(line) + "\n")
			if err := Serve(context.Background(), in, &out, Options{FS: fsys, Home: "/store", Clock: clk, ProcessName: "1-1"}); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			lines := bytes.SplitAfter(out.Bytes(), []byte("\n"))
			if len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			}
			if len(lines) < 1 || len(lines) > 2 {
				t.Fatalf("%d reply lines:\n%s", len(lines), out.Bytes())
			}
			for _, l := range lines {
				if !bytes.HasSuffix(l, []byte("\n")) {
					t.Fatalf("reply without a newline: %q", l)
				}
				replies := []json.RawMessage{l}
				if bytes.HasPrefix(l, []byte("[")) {
					if init != fuzzInitBatches {
						t.Fatalf("a batch reply outside 2025-03-26: %q", l)
					}
					if err := json.Unmarshal(l, &replies); err != nil || len(replies) == 0 {
						t.Fatalf("not a batch reply (%v): %q", err, l)
					}
				}
				for _, r := range replies {
					checkReply(t, r)
				}
			}
		}
	})
}

// fuzzInitBatches starts a session of the one revision with batches.
const fuzzInitBatches = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","clientInfo":{"name":"fuzz"}}}`

func checkReply(t *testing.T, l []byte) {
	t.Helper()
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(l, &r); err != nil || r.JSONRPC != "2.0" || r.ID == nil || (r.Result == nil) == (r.Error == nil) {
		t.Fatalf("not a JSON-RPC reply (%v): %q", err, l)
	}
}

func idScannerSeeds() [][]byte {
	return append(serveLineSeeds(),
		[]byte(`{"method":"ping","params":{"id":4,"a":["}",{"id":5}]},"id" : "x\\\"y"}`),
		[]byte(`{"\u0069d":7,"id":8}`),
		[]byte(`{"id":1,"id":{}}`),
		[]byte(` {"id":-0.5e-3 }`),
		// An id of maxIDBytes is echoed, one byte more is not, however much
		// white space stands around it.
		[]byte(`{"id": "`+strings.Repeat("k", maxIDBytes-2)+`"	}`),
		[]byte(`{"id":`+strings.Repeat("7", maxIDBytes+1)+`}`),
		[]byte(`{"id":"`+strings.Repeat("k", 3400)+`"}`), // CI's finding: a long id was compared with parseMessage's
		// The envelope wherever its members stand; a notification; a batch.
		[]byte(`{"params":{"arguments":{"name":"x","content":"}"},"name":"append_to_inbox"},"id":3,"jsonrpc":"2.0","method":"tools/call"}`),
		[]byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"z"}}}`),
		[]byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"},"params":[{"name":"b"}],"id":null}`),
		[]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"method":"tools/call","params":{"method":"x"}}]`),
	)
}

// FuzzIDScanner: on any message short enough to parse, fed whole or a
// byte at a time (as if split anywhere between reads), the scanner reads
// the id parseMessage replies with, or finds none where parseMessage finds
// none, so a message too long to parse gets the reply id it would have had;
// but for an id over maxIDBytes, which it does not hold and reads as none.
func FuzzIDScanner(f *testing.F) {
	for _, s := range idScannerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return // the scanner does not check validity; parseMessage does
		}
		want := nullID
		if req, reply := parseMessage(line); reply != nil {
			want = reply.ID
		} else if req == nil {
			return // a response: parseMessage does not read its id
		} else if req.id != nil {
			want = req.id
		}
		if len(want) > maxIDBytes {
			want = nullID
		}
		var whole, bytewise idScanner
		whole.feed(line)
		for i := range line {
			bytewise.feed(line[i : i+1])
		}
		if !bytes.Equal(whole.ID(), want) || !bytes.Equal(bytewise.ID(), want) {
			t.Fatalf("%q: scanner id %s (a byte at a time %s), parseMessage's %s", line, whole.ID(), bytewise.ID(), want)
		}
		// The envelope: method, tool, notification or not, a batch's
		// tools/call, as parseMessage and the tools read them.
		method, tool, notification, call, known := envelopeOf(line)
		for _, sc := range []*idScanner{&whole, &bytewise} {
			if known && (sc.Method() != method || sc.Tool() != tool || sc.Notification() != notification) || sc.ToolsCall() != call {
				t.Fatalf("%q: scanner method %q tool %q notification %v tools/call %v; parseMessage's %q %q %v %v", line, sc.Method(), sc.Tool(), sc.Notification(), sc.ToolsCall(), method, tool, notification, call)
			}
		}
	})
}

// envelopeOf is what parseMessage and the tools read of line: its method
// and tool (params.name) when strings, whether it is a notification,
// whether it is (or a batch holds) a tools/call; known is false when a
// string among them is longer than the scanner holds (maxIDBytes).
func envelopeOf(line []byte) (method, tool string, notification, call, known bool) {
	known = true
	str := func(raw json.RawMessage) string {
		var v string
		if len(raw) > maxIDBytes {
			known = false
		}
		if isJSONString(raw) && json.Unmarshal(raw, &v) == nil {
			return v
		}
		return ""
	}
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) == nil {
		for _, el := range batch {
			var fields map[string]json.RawMessage
			if json.Unmarshal(el, &fields) == nil && str(fields["method"]) == "tools/call" {
				call = true
			}
		}
		return "", "", false, call, true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil || fields == nil {
		return "", "", false, false, true
	}
	method, _ = str(fields["method"]), str(fields["jsonrpc"])
	if params, ok := paramsObject(fields["params"]); ok {
		tool = str(params["name"])
	}
	req, reply := parseMessage(line)
	return method, tool, reply == nil && req != nil && req.id == nil, method == "tools/call", known
}
