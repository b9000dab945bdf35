package codexgen

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Every line is a rollout line, and the rollouts are the same bytes on
// every generation: benchmarks of two builds import the same input.
func TestRollouts(t *testing.T) {
	all := Rollouts()
	again := generate()
	var size, lines int
	for i, r := range all {
		if !bytes.Equal(r.Data, again[i].Data) || r.Path != again[i].Path {
			t.Fatalf("%s: not the same on a second generation", r.Path)
		}
		size += len(r.Data)
		for n, line := range bytes.Split(bytes.TrimSuffix(r.Data, []byte("\n")), []byte("\n")) {
			lines++
			var l struct {
				Timestamp string          `json:"timestamp"`
				Type      string          `json:"type"`
				Payload   json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(line, &l); err != nil || l.Timestamp == "" || l.Type == "" || len(l.Payload) == 0 || l.Payload[0] != '{' {
				t.Fatalf("%s:%d: not a rollout line (%v): %.200s", r.Path, n+1, err, line)
			}
		}
	}
	t.Logf("%d files, %d lines, %d bytes", len(all), lines, size)
	if size < 12<<20 || size > 20<<20 {
		t.Errorf("%d bytes, want about 15 MB", size)
	}
}
