package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// The Rust original's compaction fixture (upstream-store.md, 2.1), as
// flags so other shapes can be run:
//
//	go test -bench Compaction ./bench/... -turns 3000 -files 64 -rereads 5
var (
	flagTurns   = flag.Int("turns", 3000, "compaction fixture: distinct assistant messages")
	flagFiles   = flag.Int("files", 64, "compaction fixture: distinct source files")
	flagRereads = flag.Int("rereads", 5, "compaction fixture: times each file is read")
)

// Event is one event of a fixture, as an agent would append it.
type Event struct {
	Kind      eventlog.Kind
	Label     string
	Body      []byte
	TokensIn  uint64
	TokensOut uint64
}

// Fixture is a generated session.
type Fixture struct {
	Name     string
	Events   []Event
	Logical  int64 // sum of body bytes
	Distinct int64 // bytes of distinct bodies
	Objects  int   // distinct bodies
}

// fixtureMessage is the original's message(turn): serde_json, compact,
// keys sorted.
func fixtureMessage(turn int) []byte {
	role := "user"
	if turn%2 == 0 {
		role = "assistant"
	}
	m := map[string]any{
		"role":        role,
		"model":       "local/qwen3-coder-30b",
		"stop_reason": "tool_use",
		"content": []any{map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%08x", turn), "name": "read_file",
			"input": map[string]any{"path": fmt.Sprintf("crates/rook-core/src/session/turn_%d.rs", turn), "offset": turn * 40},
		}},
		"usage": map[string]any{"input_tokens": 18000 + turn, "output_tokens": 120},
	}
	b, _ := json.Marshal(m) // encoding/json sorts map keys, as serde_json's map does
	return b
}

// fixtureSource is the original's source_file(n): 400 handler blocks.
func fixtureSource(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "    pub fn handler_%d_%d(&self, ctx: &Context) -> Result<Response> {\n", n, i)
		b.WriteString("        let span = tracing::info_span!(\"handler\");\n        let _g = span.enter();\n        self.dispatch(ctx)\n    }\n")
	}
	return b.Bytes()
}

// CompactionFixture builds the original's transcript: turns assistant
// messages, then each of files source files read rereads times round-robin
// as tool results.
func CompactionFixture(turns, files, rereads int) Fixture {
	f := Fixture{Name: fmt.Sprintf("%d turns + %d tool results (%d distinct files, %d reads each)", turns, files*rereads, files, rereads)}
	seen := map[cas.Key]bool{}
	add := func(e Event) {
		f.Events = append(f.Events, e)
		f.Logical += int64(len(e.Body))
		if id := cas.ID(e.Body); !seen[id] {
			seen[id] = true
			f.Distinct += int64(len(e.Body))
			f.Objects++
		}
	}
	for t := 0; t < turns; t++ {
		add(Event{Kind: eventlog.KindAssistant, Label: "model", Body: fixtureMessage(t), TokensIn: 18000, TokensOut: 120})
	}
	sources := make([][]byte, files)
	for n := range sources {
		sources[n] = fixtureSource(n)
	}
	for r := 0; r < rereads; r++ {
		for n := 0; n < files; n++ {
			add(Event{Kind: eventlog.KindToolResult, Label: "read_file", Body: sources[n]})
		}
	}
	return f
}
