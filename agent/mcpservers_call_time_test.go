package agent

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// A call's tool-call event carries when the call was made (RunMCPCall's
// start, by rook's clock), its result when it came: stamped when it was
// recorded, after the tool finished (and after any wait for the writer
// lock), a tool that works 5 minutes showed as called 5 minutes late, at
// the instant of its result, and `rook session show` did not tell when the
// call was made.
func TestMCPCallEventTimeIsWhenMade(t *testing.T) {
	fake := &fakeMCP{}
	fake.setTools("slow")
	r := testRook(t, vfs.NewMem())
	clk := r.clock.(*clock.Fixed)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			clk.Advance(5 * time.Minute) // the tool works 5 minutes
		}
		fake.ServeHTTP(w, req)
	}))
	defer srv.Close()
	ctx := context.Background()
	if _, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "files", URL: srv.URL}, Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	made := clk.Now()
	if _, err := r.MCPCall(ctx, "files", "slow", []byte(`{"q":"x"}`), MCPCallOptions{Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	_, id, err := r.MCPServer("files")
	if err != nil {
		t.Fatal(err)
	}
	var call, result *eventlog.Event
	if err := r.eachEvent(id, func(ev eventlog.Event) error {
		switch ev.Kind {
		case eventlog.KindToolCall:
			call = &ev
		case eventlog.KindToolResult:
			result = &ev
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if call == nil || result == nil {
		t.Fatalf("call %v, result %v: not both recorded", call, result)
	}
	if !call.Time.Equal(made) {
		t.Fatalf("tool-call event at %v, the call was made at %v (its result at %v)", call.Time, made, result.Time)
	}
}
