package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// FuzzServerText feeds what a server writes (a tools/list page, a call
// result, a WWW-Authenticate value, an event stream) to the readers: none
// may panic, and a page that reads has named tools.
// serverTextSeeds are the fuzz target's seeds (also in testdata/fuzz).
func serverTextSeeds() [][]byte {
	var out [][]byte
	for _, s := range []string{
		`{"tools":[{"name":"a","annotations":{"readOnlyHint":true}}],"nextCursor":""}`,
		`{"content":[{"type":"image","data":"AAA="},{"type":"resource","resource":{"blob":"AA"}}],"structuredContent":[1],"isError":true}`,
		`Bearer resource_metadata="x", error="invalid_token", Basic realm="a\"b"`,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"data: [{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"ping\"}]\n\n",
	} {
		out = append(out, []byte(s))
	}
	return out
}

func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzServerText": serverTextSeeds()})
}

func FuzzServerText(f *testing.F) {
	for _, s := range serverTextSeeds() {
		f.Add(s)
	}
	// A transport with no server behind it: a server request in the
	// stream is answered by a POST that fails at once, as one to a server
	// gone away would. (Keeping such requests out of the input by looking
	// for "method" missed "methoD", which JSON matches too.)
	t := &httpTransport{
		url:    &url.URL{Scheme: "http", Host: "server.invalid", Path: "/mcp"},
		client: &http.Client{Transport: noServer{}},
		handle: func(m *message) *message { return m },
	}
	f.Fuzz(func(tt *testing.T, b []byte) {
		if tools, _, err := parseToolsPage(json.RawMessage(b), 1); err == nil {
			for _, tool := range tools {
				if tool.Name == "" {
					tt.Fatalf("a tool without a name from %q", b)
				}
			}
		}
		parseResult(json.RawMessage(b))
		parseChallenges([]string{string(b)})
		decodeMessages(b)
		t.readStream(context.Background(), bytes.NewReader(b), "1", "x", 1<<20, &streamState{})
	})
}

// noServer is an http.RoundTripper with nothing at the other end.
type noServer struct{}

func (noServer) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no server in a fuzz run")
}
