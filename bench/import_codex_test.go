package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
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
	b.SetBytes(in)
	b.ResetTimer()
	var cpu time.Duration // user + system time of the timed parts
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		home := filepath.Join(b.TempDir(), "store")
		if _, err := cas.Init(nil, nil, home); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := cpuTime()
		r, err := agent.Open(home, agent.Options{Writable: true})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := r.Import(agent.ImportOptions{Format: agent.FormatCodex, Paths: []string{dir}})
		if err == nil && (rep.Failed > 0 || len(rep.Files) != len(rollouts)) {
			err = os.ErrInvalid
		}
		if err != nil {
			b.Fatalf("import: %v (%d failed, %d of %d files)", err, rep.Failed, len(rep.Files), len(rollouts))
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}
