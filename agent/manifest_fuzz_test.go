package agent

import (
	"maps"
	"os"
	"slices"
	"testing"
)

// A manifest that decodes (it passed validation, so a restore would act
// on it) encodes to one that decodes to the same paths: what Encode writes
// of a valid manifest is always valid.
func FuzzDecodeManifest(f *testing.F) {
	for _, name := range []string{"testdata/manifest_v1_dir.json", "testdata/manifest_v1_absent.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"v":2,"root":"/r","captured_at":"2026-12-02T03:00:00Z","files":{"d/a":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"}},"absent":["d/b"],"dirs":["d","d/s"],"skipped":["d/p: a named pipe"],"total_bytes":1}`))
	f.Add([]byte(`{"v":2,"root":"/r","files":{},"dirs":["../x"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		again, err := DecodeManifest(m.Encode())
		if err != nil {
			t.Fatalf("a valid manifest encodes to an invalid one: %v", err)
		}
		if !slices.Equal(m.Paths(), again.Paths()) || !slices.Equal(m.Dirs, again.Dirs) {
			t.Fatalf("paths changed in a round trip: %q %q, then %q %q", m.Paths(), m.Dirs, again.Paths(), again.Dirs)
		}
		// Setuid, setgid and sticky included: "4755" is written as read.
		if !maps.Equal(m.DirModes, again.DirModes) {
			t.Fatalf("directory modes changed in a round trip: %v, then %v", m.DirModes, again.DirModes)
		}
	})
}
