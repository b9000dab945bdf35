package bench

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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
	benchImport(b, agent.FormatClaudeCode, corpusDir, in, len(files))
}

// benchImport times the import of dir (files files, in bytes) into a
// fresh store, Open and Close (the index commit) included, and reports
// the CPU time (user + system) of each: steadier than wall time on a
// shared machine, and what an import costs whatever the cores.
func benchImport(b *testing.B, format, dir string, in int64, files int) {
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
		rep, err := r.Import(agent.ImportOptions{Format: format, Paths: []string{dir}})
		if err == nil && (rep.Failed > 0 || len(rep.Files) != files) {
			err = os.ErrInvalid
		}
		if err != nil {
			b.Fatalf("import: %v (%d failed, %d of %d files)", err, rep.Failed, len(rep.Files), files)
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user plus system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkImportPeerZstd3 is the peer of BenchmarkImport that issue 7's
// speed target names: zstd -3 (one thread) of the same bytes, concatenated.
// Run the two together and compare their B/s.
func BenchmarkImportPeerZstd3(b *testing.B) {
	files, err := readCorpus(corpusDir)
	if err != nil || len(files) == 0 {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	all := corpusBytes(files)
	b.SetBytes(int64(len(all)))
	b.ResetTimer()
	before := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := peerZstd(all, 3); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-before).Milliseconds())/float64(b.N), "cpu-ms/op")
}
