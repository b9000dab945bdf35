package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeEnv carries a FakeConfig to this test binary re-run as a stdio server.
const fakeEnv = "ROOK_TEST_MCPCLIENT_FAKE"

func TestMain(m *testing.M) {
	FakeMain(fakeEnv)
	os.Exit(m.Run())
}

// mode is a way to reach a fake: streamable HTTP answering JSON or event
// streams, or stdio in a child process.
type mode struct {
	name  string
	reach func(t *testing.T, cfg FakeConfig) (*Fake, Spec) // the *Fake is nil for stdio
}

var (
	httpJSON = mode{"http-json", func(t *testing.T, cfg FakeConfig) (*Fake, Spec) { return httpFake(t, cfg) }}
	httpSSE  = mode{"http-sse", func(t *testing.T, cfg FakeConfig) (*Fake, Spec) { cfg.SSE = true; return httpFake(t, cfg) }}
	stdio    = mode{"stdio", func(t *testing.T, cfg FakeConfig) (*Fake, Spec) { return nil, FakeSpec("fake", fakeEnv, cfg) }}
	allModes = []mode{httpJSON, httpSSE, stdio}
)

// httpFake serves a Fake on 127.0.0.1 for the test's life.
func httpFake(t *testing.T, cfg FakeConfig) (*Fake, Spec) {
	t.Helper()
	f := NewFake(cfg)
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		f.Close()
		srv.Close()
	})
	return f, Spec{Name: "fake", URL: srv.URL + "/mcp"}
}

// testOptions are short limits for tests.
func testOptions() Options {
	return Options{
		ClientName: "rook-test", ClientVersion: "0",
		Limits: Limits{ConnectTimeout: 5 * time.Second, Timeout: 5 * time.Second, CallTimeout: 5 * time.Second},
	}
}

func connect(t *testing.T, s Spec, o Options) *Client {
	t.Helper()
	c, err := Connect(context.Background(), s, o)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantFailure checks that err is a *Failure of kind and returns it.
func wantFailure(t *testing.T, err error, kind FailureKind) *Failure {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not a *Failure", err, err)
	}
	if f.Kind != kind {
		t.Fatalf("failure %q is %v, want %v", f.Msg, f.Kind, kind)
	}
	return f
}

func wantContains(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("%q does not say %q", s, p)
		}
	}
}

func someTools(n int) []FakeTool {
	var out []FakeTool
	for i := range n {
		out = append(out, FakeTool{Name: fmt.Sprintf("tool_%02d", i), Description: fmt.Sprintf("tool number %d", i)})
	}
	return out
}

func names(tools []Tool) string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}
