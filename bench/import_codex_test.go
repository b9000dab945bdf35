package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/codexgen"
)

// BenchmarkImportCodex is `rook import codex` of generated rollouts
// (codexgen.Rollouts: ~15 MB in 14 files) into a fresh store, closed each
// time: BenchmarkImport's measure for Codex, which has no shared corpus.
func BenchmarkImportCodex(b *testing.B) {
	rollouts := codexgen.Rollouts()
	dir := filepath.Join(b.TempDir(), "sessions")
	var in int64
	for _, r := range rollouts {
		p := filepath.Join(dir, filepath.FromSlash(r.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, r.Data, 0o644); err != nil {
			b.Fatal(err)
		}
		in += int64(len(r.Data))
	}
	benchImport(b, agent.FormatCodex, dir, in, len(rollouts))
}

// BenchmarkReimportUnchangedCodexZstd is BenchmarkReimportUnchanged for
// .zst rollouts (codexgen.Rollouts, each compressed as Codex compresses an
// idle one) in a store that holds them already: known unchanged by their
// stat, unread (before, each was decompressed and hashed every time).
func BenchmarkReimportUnchangedCodexZstd(b *testing.B) {
	rollouts := codexgen.Rollouts()
	dir := filepath.Join(b.TempDir(), "sessions")
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	for _, r := range rollouts {
		p := filepath.Join(dir, filepath.FromSlash(r.Path)) + ".zst"
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, enc.EncodeAll(r.Data, nil), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	home := filepath.Join(b.TempDir(), "store")
	if _, err := cas.Init(nil, nil, home); err != nil {
		b.Fatal(err)
	}
	// A minute on, so that the files just written are quiet when listed
	// and their stats are recorded.
	r, err := agent.Open(home, agent.Options{Writable: true, Clock: &clock.Fixed{T: time.Now().Add(time.Minute)}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Import(agent.ImportOptions{Format: agent.FormatCodex, Paths: []string{dir}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := r.Import(agent.ImportOptions{Format: agent.FormatCodex, Paths: []string{dir}})
		if err != nil || rep.Unchanged != len(rollouts) {
			b.Fatalf("re-import: %v, %d of %d unchanged", err, rep.Unchanged, len(rollouts))
		}
	}
}
