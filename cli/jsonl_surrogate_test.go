package cli

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// A --jsonl line is refused, with the way to give its body, where JSON
// decoding would store U+FFFD for what it holds: bytes that are not
// UTF-8, half a surrogate pair. A whole pair, an escaped backslash before
// "ud800", and U+FFFD itself are taken as written.
func TestJSONLLineThatDecodingWouldChangeIsRefused(t *testing.T) {
	for _, tc := range []struct {
		line string
		bad  string // the refusal's words; "" when taken
		body string
	}{
		{line: "{\"kind\":\"user\",\"body\":\"caf\xe9\"}", bad: "not UTF-8"},
		{line: `{"kind":"user","body":"a\ud800"}`, bad: "surrogate"},
		{line: `{"kind":"user","body":"a\ud800b"}`, bad: "surrogate"},
		{line: `{"kind":"user","body":"\udc00"}`, bad: "surrogate"},
		{line: `{"kind":"user","body":"\ud800\ud800\udc00"}`, bad: "surrogate"},
		{line: `{"kind":"user","body":"x","label":"\ud83d"}`, bad: "surrogate"},
		{line: `{"kind":"user","body":"\ud83d\ude00"}`, body: "\U0001F600"},
		{line: `{"kind":"user","body":"\\ud800"}`, body: `\ud800`},
		{line: `{"kind":"user","body":"\ufffd \\\"q\" ` + "\ufffd" + `"}`, body: "\ufffd \\\"q\" \ufffd"},
		{line: `{"kind":"user","body":"\u00e9\n"}`, body: "é\n"},
	} {
		en, err := parseJSONLine([]byte(tc.line), nil)
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "body_file")):
			t.Errorf("%q: %v, want a refusal saying %q", tc.line, err, tc.bad)
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.line, err)
		case tc.bad == "" && string(en.Body) != tc.body:
			t.Errorf("%q: body %q, want %q", tc.line, en.Body, tc.body)
		}
	}
}

// FuzzParseJSONLLine: a --jsonl line is refused or taken, never a panic;
// a body taken holds a U+FFFD only where the line wrote one (as the
// character or as its escape): decoding replaced nothing.
func FuzzParseJSONLLine(f *testing.F) {
	f.Add([]byte(`{"kind":"user","body":"hello","tokens_in":3}`))
	f.Add([]byte(`{"kind":"note","label":"x","body":"\ud83d\ude00 \ufffd"}`))
	f.Add([]byte(`{"kind":"user","body":"a\ud800"}`))
	f.Add([]byte("{\"kind\":\"user\",\"body\":\"caf\xe9\"}"))
	f.Add([]byte(`{"kind":"user","body":"\\ud800\\"}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"kind":"note","label":"a\ufffdb","label_base64":"Yf9i","body":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var j jsonlEvent
		if json.Unmarshal(line, &j) == nil && j.BodyFile != "" {
			return // would read a file the input names
		}
		en, err := parseJSONLine(line, nil)
		if err != nil {
			return
		}
		written := strings.Count(string(line), "\ufffd") + strings.Count(strings.ToLower(string(line)), `\ufffd`)
		if got := strings.Count(string(en.Body), "\ufffd"); got > written {
			t.Fatalf("%q: body %q holds %d U+FFFD, the line wrote %d", line, en.Body, got, written)
		}
		// A label taken from label_base64 is its bytes; one beside it
		// is that label as JSON writes it.
		if j.LabelBase64 != nil {
			b, _ := base64.StdEncoding.DecodeString(*j.LabelBase64)
			if en.Label != string(b) {
				t.Fatalf("%q: label %q, label_base64 says %q", line, en.Label, b)
			}
		}
	})
}
