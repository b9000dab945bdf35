package bench

import (
	"crypto/sha256"
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

// BenchmarkReimportUnchanged is `rook import claude-code` of the corpus
// into a store that holds it already: what an import on a timer costs
// when nothing changed (the files are known unchanged by their size and
// times, unread; before that, each was read and hashed). Its peer, in the
// same run, is sha256sum-like reading and hashing of the same bytes
// (BenchmarkReadAndHashCorpus), what the import did before.
func BenchmarkReimportUnchanged(b *testing.B) {
	files, err := readCorpus(corpusDir)
	if err != nil || len(files) == 0 {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	home := filepath.Join(b.TempDir(), "store")
	if _, err := cas.Init(nil, nil, home); err != nil {
		b.Fatal(err)
	}
	r, err := agent.Open(home, agent.Options{Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for range 2 { // the second records the files' stats, where the first could not
		if _, err := r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{corpusDir}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{corpusDir}})
		if err != nil || rep.Unchanged != len(files) {
			b.Fatalf("re-import: %v, %d of %d unchanged", err, rep.Unchanged, len(files))
		}
	}
}

// BenchmarkReadAndHashCorpus reads and SHA-256s every corpus file: what
// an import with nothing new did before it knew files by their stat.
func BenchmarkReadAndHashCorpus(b *testing.B) {
	files, err := readCorpus(corpusDir)
	if err != nil || len(files) == 0 {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	for i := 0; i < b.N; i++ {
		for _, f := range files {
			data, err := os.ReadFile(f.path)
			if err != nil {
				b.Fatal(err)
			}
			sha256.Sum256(data)
		}
	}
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
