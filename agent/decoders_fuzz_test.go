package agent

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// Seed corpora live in testdata/fuzz/<Target>/ as well as in f.Add, so a
// plain `go test` replays them. Regenerate the files with:
// ROOK_WRITE_FUZZ_SEEDS=1 go test -run TestWriteDecoderFuzzSeeds ./agent/

func refSeeds() [][]byte {
	return [][]byte{
		[]byte("2b806e7d75371072494f629b7fe1a565 1764496800000000000\n"),
		[]byte("2b806e7d75371072494f629b7fe1a565 1764496800000000000\n00000000000000000000000000000000 -1\n"),
		[]byte("2b806e7d75371072494f629b7fe1a565 9223372036854775807"),
		[]byte("2B806E7D75371072494F629B7FE1A565\t1\r\n"),
		[]byte("2b806e7d75371072494f629b7fe1a5 1\n"),
		[]byte("\n\n"),
	}
}

// FuzzParseRefLines: a checkpoint ref that parses writes back (as
// CreateCheckpoint does) to lines that parse to the same snapshots.
func FuzzParseRefLines(f *testing.F) {
	for _, s := range refSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, err := parseRefLines(b)
		if err != nil {
			return
		}
		var w bytes.Buffer
		for _, l := range lines {
			fmt.Fprintf(&w, "%x %d\n", l.id, l.at.UnixNano())
		}
		again, err := parseRefLines(w.Bytes())
		if err != nil {
			t.Fatalf("written ref does not parse: %v\n%q", err, w.Bytes())
		}
		if len(again) != len(lines) {
			t.Fatalf("%d lines, %d after a round trip", len(lines), len(again))
		}
		for i := range lines {
			if again[i].id != lines[i].id || !again[i].at.Equal(lines[i].at) {
				t.Fatalf("line %d changed in a round trip: %+v vs %+v", i+1, lines[i], again[i])
			}
		}
	})
}

func configSeeds() [][]byte {
	return [][]byte{
		{},
		[]byte("[storage]\ngc_grace = \"10m\"\n\n[storage.retention]\nmax_session_age_days = 30\nmax_sessions = 0\nmax_total_bytes = 1000000\nprotect_tags = [\"keep\", \"pinned\"]\n"),
		[]byte("[mcp.discovery]\nmax_bytes = 1048576\nmax_tools = 50\nmax_pages = 3\ntimeout = \"5s\"\nconnect_timeout = \"1s\"\n"),
		[]byte("[storage.retention]\nprotect_tags = []\n"),
		[]byte("storage.retention.max_sessions = -1\n"),
		[]byte("[storage.retention]\nmax_sesions = 3\n"),
		[]byte("[Storage]\nGC_Grace = \"1h\"\n"),
		[]byte("[storage]\ngc_grace = \"-1h\"\n"),
		[]byte("[storage]\ngc_grace = 10\n"),
		[]byte("[storage\n"),
	}
}

// FuzzParseConfig: a config.toml that parses has no negative limit, and
// written back as TOML parses to the same configuration.
func FuzzParseConfig(f *testing.F) {
	for _, s := range configSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("config.toml", b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		r := c.Storage.Retention
		if r.MaxSessionAgeDays == nil || *r.MaxSessionAgeDays < 0 || r.MaxSessions == nil || *r.MaxSessions < 0 || r.MaxTotalBytes == nil || *r.MaxTotalBytes < 0 || r.ProtectTags == nil || c.Storage.GCGrace.Duration < 0 {
			t.Fatalf("accepted config out of range: %+v", c)
		}
		var w bytes.Buffer
		if err := toml.NewEncoder(&w).Encode(c); err != nil {
			t.Fatalf("parsed config does not encode: %v", err)
		}
		again, err := ParseConfig("config.toml", w.Bytes())
		if err != nil {
			t.Fatalf("written config does not parse: %v\n%s", err, w.Bytes())
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("config changed in a round trip:\n%+v\n%+v\n%s", c, again, w.Bytes())
		}
	})
}

func TestWriteDecoderFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzParseRefLines": refSeeds(),
		"FuzzParseConfig":   configSeeds(),
	})
}
