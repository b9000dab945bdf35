package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// laggingCtx is a context whose deadline has passed but whose timer has
// not fired yet: on a loaded machine the pipe's write deadline (the same
// instant) can fire first.
type laggingCtx struct{ context.Context }

func (laggingCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A write to a stdio program that ran out of the call's time was said as
// "the server could not be reached: could not write to the program:
// write |1: i/o timeout" (after a second's wait) when the pipe's deadline
// fired before the context's timer, instead of the timeout it was.
func TestStdioWriteDeadlineIsTheTimeout(t *testing.T) {
	c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{Tools: someTools(1)}), testOptions())
	st := c.tr.(*stdioTransport)
	ctx := laggingCtx{context.Background()}
	req := &message{JSONRPC: "2.0", ID: json.RawMessage("99"), Method: "tools/call", Params: json.RawMessage(`{"name":"tool_00"}`)}
	start := time.Now()
	_, _, err := st.roundTrip(ctx, req, 1<<20)
	if !errors.Is(err, context.DeadlineExceeded) || KindOf(err) != 0 {
		t.Fatalf("roundTrip past its deadline: %v (kind %v), want the deadline", err, KindOf(err))
	}
	if err := st.notify(ctx, &message{JSONRPC: "2.0", Method: "notifications/initialized"}); !errors.Is(err, context.DeadlineExceeded) || KindOf(err) != 0 {
		t.Fatalf("notify past its deadline: %v (kind %v), want the deadline", err, KindOf(err))
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("took %v", d)
	}
}
