package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A tools/call result that is not an object is no call result: a server
// that answered "result": null made `rook mcp call` print nothing and exit
// 0, as if the tool had run and said nothing.
func TestCallResultNotAnObject(t *testing.T) {
	var tools []FakeTool
	for i, raw := range []string{`null`, `"done"`, `[{"type":"text","text":"x"}]`, `42`} {
		tools = append(tools, FakeTool{Name: "t" + string(rune('a'+i)), Result: json.RawMessage(raw)})
	}
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			_, spec := m.reach(t, FakeConfig{Tools: tools})
			c := connect(t, spec, testOptions())
			for i, tool := range tools {
				r, err := c.Call(context.Background(), tool.Name, nil)
				f := wantFailure(t, err, ProtocolError)
				if r != nil || !strings.Contains(f.Msg, "not a call result") {
					t.Fatalf("result %d (%s): %+v, %q", i, tool.Result, r, f.Msg)
				}
			}
		})
	}
}
