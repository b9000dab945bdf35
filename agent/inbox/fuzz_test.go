package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
)

// Seed corpora live in testdata/fuzz/<Target>/ as well as in f.Add, so a
// plain `go test` replays them. Regenerate the files with:
// ROOK_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./agent/inbox/

func spoolSeeds() [][]byte {
	save := func(id, content string) []byte {
		b, err := encodeLine(Save{V: saveVersion, ID: id, Time: time.Unix(1764496800, 5).UTC(), Client: "claude", ClientName: "claude-code", Title: "t", Content: content})
		if err != nil {
			panic(err)
		}
		return b
	}
	one, two := save("1-2-1", "a note"), save("1-2-2", "é\u2028\x00")
	return [][]byte{
		one,
		append(append(bytes.Clone(lockedLine), one...), two...),
		append(bytes.Clone(one), two[:len(two)-5]...), // torn last line
		append([]byte("00000000 {}\n"), one...),       // checksum wrong
		[]byte("zzzzzzzz {}\n"),
		{},
	}
}

// FuzzDecodeSpoolLine: a spool line that decodes re-encodes (as a server
// writes it) to a line that decodes to the same save.
func FuzzDecodeSpoolLine(f *testing.F) {
	for _, s := range spoolSeeds() {
		f.Add(bytes.TrimSuffix(s, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var s Save
		if decodeLine(line, &s) != nil {
			return
		}
		enc, err := encodeLine(s)
		if err != nil {
			t.Fatalf("decoded save does not encode: %v", err)
		}
		var again Save
		if err := decodeLine(bytes.TrimSuffix(enc, []byte("\n")), &again); err != nil {
			t.Fatalf("written line does not decode: %v\n%q", err, enc)
		}
		a, _ := json.Marshal(s)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) || !again.Time.Equal(s.Time) {
			t.Fatalf("save changed in a round trip:\n%s\n%s", a, b)
		}
	})
}

// FuzzReadPending: whatever a spool file holds, from whatever drained
// offset, the drain takes only whole, checked lines past that offset, in
// order, each ending where its line does.
func FuzzReadPending(f *testing.F) {
	for _, s := range spoolSeeds() {
		f.Add(s, int64(0))
		f.Add(s, int64(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, file []byte, off int64) {
		if off < 0 {
			return // ReadProgress refuses a negative offset
		}
		fsys, home := vfs.NewMem(), "/h"
		if err := fsys.MkdirAll(spoolDir(home), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(filepath.Join(spoolDir(home), "p.jsonl"), file, 0o600); err != nil {
			t.Fatal(err)
		}
		pend, sizes, err := ReadPending(fsys, home, Progress{"p.jsonl": off})
		if err != nil {
			t.Fatal(err)
		}
		if sizes["p.jsonl"] != int64(len(file)) {
			t.Fatalf("size %d of %d", sizes["p.jsonl"], len(file))
		}
		start := off
		if start > int64(len(file)) {
			start = 0
		}
		for _, p := range pend {
			if p.End <= start || p.End > int64(len(file)) || file[p.End-1] != '\n' || p.Save.ID == "" {
				t.Fatalf("save %q ends at %d (after %d, file %d)", p.Save.ID, p.End, start, len(file))
			}
			lineStart := bytes.LastIndexByte(file[:p.End-1], '\n') + 1
			if int64(lineStart) < start {
				lineStart = int(start)
			}
			var s Save
			if err := decodeLine(file[lineStart:p.End-1], &s); err != nil || s.ID != p.Save.ID {
				t.Fatalf("save %q is not the line before %d: %v", p.Save.ID, p.End, err)
			}
			start = p.End
		}
	})
}

func progressSeeds() [][]byte {
	var out [][]byte
	for _, s := range []string{`{}`, `{"a.jsonl":10,"b.jsonl":0}`, `null`, `{"a.jsonl":-1}`, `{"a.jsonl":1e3}`, `[]`} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzReadProgress: a progress file that reads has no negative offset, and
// written back reads the same.
func FuzzReadProgress(f *testing.F) {
	for _, s := range progressSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fsys, home := vfs.NewMem(), "/h"
		if err := fsys.MkdirAll(Dir(home), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(drainedPath(home), b, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := ReadProgress(fsys, home)
		if err != nil {
			return
		}
		if p == nil {
			t.Fatal("nil progress without an error")
		}
		for name, off := range p {
			if off < 0 {
				t.Fatalf("offset %d for %s", off, name)
			}
		}
		if err := WriteProgress(fsys, home, p); err != nil {
			t.Fatal(err)
		}
		again, err := ReadProgress(fsys, home)
		if err != nil || len(again) != len(p) {
			t.Fatalf("written progress reads %v (%v), not %v", again, err, p)
		}
		for name, off := range p {
			if again[name] != off {
				t.Fatalf("offset of %s: %d, %d after a round trip", name, off, again[name])
			}
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	var lines [][]byte
	for _, s := range spoolSeeds() {
		lines = append(lines, bytes.TrimSuffix(s, []byte("\n")))
	}
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzDecodeSpoolLine": lines,
		"FuzzReadProgress":    progressSeeds(),
	})
	// FuzzReadPending takes two arguments: its files are written here.
	dir := filepath.Join("testdata", "fuzz", "FuzzReadPending")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range spoolSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nint64(%d)\n", s, len(s)/2)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
