package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent"
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
