package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
)

// BenchmarkImport is `rook import claude-code` of the whole corpus into a
// fresh store, closed (index committed) each time: the import speed warm,
// for profiling (-cpuprofile) and for comparing commits with benchstat.
// BenchmarkCorpus times one import among everything else it measures.
func BenchmarkImport(b *testing.B) {
	files, err := readCorpus(corpusDir)
	if err != nil || len(files) == 0 {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	var in int64
	for _, f := range files {
		in += f.size
	}
	b.SetBytes(in)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		home := filepath.Join(b.TempDir(), "store")
		if _, err := cas.Init(nil, nil, home); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := agent.Open(home, agent.Options{Writable: true})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{corpusDir}})
		if err == nil && rep.Failed > 0 {
			err = os.ErrInvalid
		}
		if err != nil {
			b.Fatalf("import: %v (%d failed)", err, rep.Failed)
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
