package agent

import (
	"bytes"
	stdjson "encoding/json"

	json "github.com/go-json-experiment/json/v1"
	"reflect"
	"testing"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// The mappers decode with github.com/go-json-experiment/json/v1, the
// encoding/json of Go 1.27 (built on json/v2) for Go 1.26: about 2.4 times
// faster on the import's views. decodeTargets are the types they decode
// into; FuzzDecodeLikeEncodingJSON holds the two decoders to the same
// answers on every one of them.
var decodeTargets = []func() any{
	func() any { return new(claudeLine) },
	func() any { return new(claudeMessage) },
	func() any { return new([]claudeBlock) },
	func() any { return new(string) },
	func() any { return new(codexLine) },
	func() any { return new(codexTyped) },
	func() any { return new(codexSource) },
	func() any { return new(codexSpawn) },
	func() any { return new(codexUsage) },
	func() any { return new([]codexInputItem) },
}

// decodeEdgeSeeds are what the two decoders are most likely to differ on.
var decodeEdgeSeeds = []string{
	`{"type":"user","TYPE":"assistant","Type":"system"}`,
	`{"type":"user","type":"assistant"}`,
	`{"isMeta":"yes","type":"user"}`,
	`{"type":"user","message":{"role":"user","content":"hi \u00e9 \ud83d\ude00 \ud800"}}`,
	"{\"type\":\"user\",\"cwd\":\"\xff\xfe\"}",
	`{"message":{"usage":{"input_tokens":-1,"output_tokens":1.5,"cache_read_input_tokens":18446744073709551616}}}`,
	`{"message":{"usage":{"input_tokens":1e3}}}`,
	`{"message":{"usage":null,"content":null},"type":null}`,
	`{"snapshot":{"trackedFileBackups":{"a":{"backupFileName":null},"b":{"backupFileName":"x@v1"}}}}`,
	`[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"Bash","is_error":"no"}]`,
	`{"payload":{"info":{"total_token_usage":{ "a" : 1 },"last_token_usage":{"input_tokens":2}}}}`,
	`{"payload":{"source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}`,
	`{"a":1} trailing`,
	`  "padded"  `,
	`{"type":"user",}`,
	`{"data":{"type":1},"summary":["x"]}`,
}

func FuzzDecodeLikeEncodingJSON(f *testing.F) {
	for _, s := range decodeEdgeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range claudeSeeds() {
		for _, line := range bytes.Split(s, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range codexSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, target := range decodeTargets {
			want, got := target(), target()
			werr, gerr := stdjson.Unmarshal(b, want), json.Unmarshal(b, got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%T from %q: encoding/json says %v, json/v1 says %v", want, b, werr, gerr)
			}
			if werr == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("%T from %q:\nencoding/json %+v\njson/v1       %+v", want, b, want, got)
			}
		}
	})
}

func TestWriteDecodeFuzzSeeds(t *testing.T) {
	var seeds [][]byte
	for _, s := range decodeEdgeSeeds {
		seeds = append(seeds, []byte(s))
	}
	fuzzseed.Write(t, map[string][][]byte{"FuzzDecodeLikeEncodingJSON": seeds})
}
