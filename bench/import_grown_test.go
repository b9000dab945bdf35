package bench

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent"
)

// grownTranscript writes a transcript of about 45 MB, the corpus's
// sessions three times over, as one session's file in a project
// directory of dir, and returns its path and a line to grow it by.
func grownTranscript(b *testing.B, dir string) (string, []byte) {
	files, err := readCorpus(corpusDir)
	if err != nil || len(files) == 0 {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	var all bytes.Buffer
	for range 3 {
		for _, f := range files {
			if filepath.Base(filepath.Dir(f.path)) == "subagents" {
				continue
			}
			all.Write(f.data)
		}
	}
	lines := bytes.Split(bytes.TrimSuffix(files[0].data, []byte("\n")), []byte("\n"))
	path := filepath.Join(dir, "-w-proj", "aaaaaaaa-0000-4000-8000-000000000001.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, all.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	return path, append(lines[len(lines)-1], '\n')
}

// BenchmarkReimportGrown is `rook import claude-code` of a 45 MB session
// that grew by one line since its last import: what an import after each
// turn of a long session costs. Its peer, in the same run, is reading and
// hashing the file (BenchmarkReadAndHashGrown), the least an import that
// checks the file still begins with what its session holds can do.
func BenchmarkReimportGrown(b *testing.B) {
	dir := b.TempDir()
	path, line := grownTranscript(b, dir)
	r, _ := newRook(b)
	defer r.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// Imported, then grown and imported again, untimed: the session is
	// one seen growing, as after its first turns.
	for i := range 2 {
		if i > 0 {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{dir}}); err != nil {
			b.Fatal(err)
		}
	}
	fi, _ := f.Stat()
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{dir}})
		if err != nil || rep.Grown != 1 || rep.Lines != 1 {
			b.Fatalf("re-import: %v, %d grown, %d lines", err, rep.Grown, rep.Lines)
		}
	}
}

// BenchmarkReadAndHashGrown reads and SHA-256s the file
// BenchmarkReimportGrown grows, as sha256sum does: through a buffer.
func BenchmarkReadAndHashGrown(b *testing.B) {
	path, _ := grownTranscript(b, b.TempDir())
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		_, err = io.CopyBuffer(h, f, make([]byte, 1<<20))
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
