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
	// Version 3 (dir modes) and 4 (the directories a rewind opened, "."
	// the workspace itself), and ones each version refuses.
	f.Add([]byte(`{"v":3,"root":"/r","files":{"d/a":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"}},"dirs":["d"],"dir_modes":{"d":"2755"},"total_bytes":1}`))
	f.Add([]byte(`{"v":4,"root":"/r","files":{"e/b":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"}},"dirs":["d"],"dir_modes":{"d":"0555"},"opened":{".":"0555","e":"0500","e/f":"1777"},"total_bytes":1}`))
	f.Add([]byte(`{"v":4,"root":"/r","files":{},"opened":{"../e":"0555","e/./f":"0500","/e":"0555"}}`))
	f.Add([]byte(`{"v":4,"root":"/r","files":{},"dirs":["d"],"opened":{"d":"0555"}}`))
	f.Add([]byte(`{"v":3,"root":"/r","files":{},"opened":{"e":"0555"}}`))
	f.Add([]byte(`{"v":4,"root":"/r","files":{},"opened":{"e":"link"}}`))
	// Version 5 (paths whose state a capture lost), and ones it refuses.
	f.Add([]byte(`{"v":5,"root":"/r","files":{"a":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"}},"absent":["b"],"unknown":["c","c","d/e"],"total_bytes":1}`))
	f.Add([]byte(`{"v":4,"root":"/r","files":{},"unknown":["c"]}`))
	f.Add([]byte(`{"v":5,"root":"/r","files":{},"absent":["c"],"dirs":["d"],"unknown":["c","d","../e"]}`))
	f.Add([]byte(`{"v":5,"root":"/r","files":{},"unknown":[]}`))
	// Version 6 (a file's special bits, said exactly, and a directory's,
	// a rewind's capture of the disk before it holding no file; a tree
	// capture's directory modes, in no dirs), and ones it refuses.
	f.Add([]byte(`{"v":6,"root":"/r","files":{},"dirs":["d"],"dir_modes":{"d":"0755"}}`))
	f.Add([]byte(`{"v":6,"root":"/r","files":{},"opened":{".":"0555"}}`))
	f.Add([]byte(`{"v":6,"root":"/r","files":{"a":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"4755"},"d/b":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"},"l":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"link"}},"dir_modes":{"d":"1777"},"total_bytes":2}`))
	f.Add([]byte(`{"v":5,"root":"/r","files":{"a":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"2755"}}}`))
	f.Add([]byte(`{"v":6,"root":"/r","files":{"d":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"}},"absent":["e"],"unknown":["u"],"dir_modes":{"d":"2755","e":"1777","u":"1777","../x":"1777"}}`))
	// One seed for each refusal of DecodeManifest and checkRel, so the
	// fuzzer starts at the edge of each check rather than finding it.
	f.Add([]byte(`{"v":7,"root":"/r","files":{}}`))
	f.Add([]byte(`{"v":1,"root":"r","files":{}}`))
	for _, p := range []string{`a\\b`, `a\u0000`, `/a`, `a/./b`, `..`, `../a`, `.`} {
		f.Add([]byte(`{"v":2,"root":"/r","files":{},"absent":["` + p + `"]}`))
	}
	f.Add([]byte(`{"v":2,"root":"/r","files":{"a":{"id":"2b806e7d75371072494f629b7fe1a565","size":1,"mode":"0644"}},"absent":["a"]}`))
	f.Add([]byte(`{"v":1,"root":"/r","files":{},"dirs":["d"]}`))
	f.Add([]byte(`{"v":2,"root":"/r","files":{},"absent":["d"],"dirs":["d","d"]}`))
	f.Add([]byte(`{"v":2,"root":"/r","files":{},"dirs":["d"],"dir_modes":{"d":"0755"}}`))
	f.Add([]byte(`{"v":3,"root":"/r","files":{},"dirs":["d"],"dir_modes":{"e":"0755","d":"link"}}`))
	f.Add([]byte(`{"v":4,"root":"/r","files":{},"dirs":["d"],"dir_modes":{"d":"4755"},"opened":{".":"link","d/e":"0555"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		unknown := slices.Clone(m.Unknown) // (Encode sorts m's in place)
		again, err := DecodeManifest(m.Encode())
		if err != nil {
			t.Fatalf("a valid manifest encodes to an invalid one: %v", err)
		}
		if !slices.Equal(m.Paths(), again.Paths()) || !slices.Equal(m.Dirs, again.Dirs) {
			t.Fatalf("paths changed in a round trip: %q %q, then %q %q", m.Paths(), m.Dirs, again.Paths(), again.Dirs)
		}
		// Setuid, setgid and sticky included: "4755" is written as read,
		// a file's too, and a version 6 file's "0755" stays one that
		// says it has none (exact).
		if !maps.Equal(m.Files, again.Files) {
			t.Fatalf("files changed in a round trip: %v, then %v", m.Files, again.Files)
		}
		for d := range again.DirModes {
			if checkRel(d) != nil {
				t.Fatalf("\"dir_modes\" names %q", d)
			}
		}
		if !maps.Equal(m.DirModes, again.DirModes) {
			t.Fatalf("directory modes changed in a round trip: %v, then %v", m.DirModes, again.DirModes)
		}
		if !maps.Equal(m.Opened, again.Opened) {
			t.Fatalf("the directories a rewind opened changed in a round trip: %v, then %v", m.Opened, again.Opened)
		}
		if !slices.Equal(slices.Compact(slices.Sorted(slices.Values(unknown))), again.Unknown) {
			t.Fatalf("the paths whose state was lost changed in a round trip: %q, then %q", unknown, again.Unknown)
		}
		for _, p := range again.Unknown {
			if checkRel(p) != nil {
				t.Fatalf("\"unknown\" names %q", p)
			}
		}
		// What a rewind acts on is in the workspace: "." or a clean
		// relative path.
		for d := range again.Opened {
			if d != "." && checkRel(d) != nil {
				t.Fatalf("\"opened\" names %q", d)
			}
		}
	})
}
