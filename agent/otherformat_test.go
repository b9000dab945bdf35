package agent

import "testing"

// otherFormat reads a file's first line that decodes as a JSON object (or
// null) for its top-level keys, as decoding it into a map did: lines that
// are not JSON, or JSON of another type, are passed; keys are compared
// decoded, escapes and all; keys of nested objects do not count.
func TestOtherFormatReadsTheFirstJSONLine(t *testing.T) {
	for _, c := range []struct {
		head, format, want string
	}{
		{`{"type":"response_item","payload":{}}`, FormatClaudeCode, FormatCodex},
		{`{"payload":{},"uuid":"u"}`, FormatClaudeCode, ""},
		{`{"uuid":"u","sessionId":"s"}`, FormatCodex, FormatClaudeCode},
		{`{"messageId":"m"}`, FormatCodex, FormatClaudeCode},
		{`{"pay\u006coad":1}`, FormatClaudeCode, FormatCodex},
		{`{"meta":{"payload":1},"x":1}`, FormatClaudeCode, ""},
		{"not json\n[1]\n\"text\"\n{\"payload\":1}\r\n", FormatClaudeCode, FormatCodex},
		{"null\n{\"payload\":1}", FormatClaudeCode, ""},
		{"\n\n {\"uuid\":\"u\"} \n", FormatCodex, FormatClaudeCode},
		{`{"payload":1}`, FormatCodex, ""},
		{"", FormatClaudeCode, ""},
	} {
		if got := otherFormat(c.format, []byte(c.head)); got != c.want {
			t.Errorf("otherFormat(%s, %q) = %q, want %q", c.format, c.head, got, c.want)
		}
	}
}
