package bench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
)

// rookResult is what the fixture costs in a rook store.
type rookResult struct {
	Plain, WithDicts int64 // stored payload bytes
	Disk             cas.DiskUsage
	Total            int64 // every byte under the store directory
	Dicts            []cas.TrainResult
}

// dirBytes sums every file under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// storeFixture appends the fixture to a new store the way an agent would
// (a barrier every 256 events, a flush every 20), then trains dictionaries
// and repacks, as `rook store maintain` and `rook store repack` do.
func storeFixture(tb testing.TB, fx Fixture) rookResult {
	dir := tb.TempDir()
	home := filepath.Join(dir, "store")
	if _, err := cas.Init(nil, nil, home); err != nil {
		tb.Fatal(err)
	}
	r, err := agent.Open(home, agent.Options{Writable: true})
	if err != nil {
		tb.Fatal(err)
	}
	m, err := r.NewSession("compaction fixture", "/bench", nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i, e := range fx.Events {
		if _, err := r.Append(m.ID, agent.Entry{Kind: e.Kind, Label: e.Label, Body: e.Body, TokensIn: e.TokensIn, TokensOut: e.TokensOut}); err != nil {
			tb.Fatal(err)
		}
		if i%20 == 19 {
			if err := r.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := r.Flush(); err != nil {
		tb.Fatal(err)
	}
	var res rookResult
	st, _ := r.Store.Stats()
	res.Plain = st.Stored
	if res.Dicts, err = r.Store.Train(cas.TrainOptions{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := r.Store.Repack(nil); err != nil {
		tb.Fatal(err)
	}
	st, _ = r.Store.Stats()
	res.WithDicts, res.Disk = st.Stored, st.Disk
	if err := r.Close(); err != nil {
		tb.Fatal(err)
	}
	res.Total = dirBytes(home)
	return res
}

func mib(n int64) string { return fmt.Sprintf("%8.2f MiB", float64(n)/(1<<20)) }

func ratio(a, b int64) string {
	if b == 0 {
		return ""
	}
	return fmt.Sprintf("%6.1fx", float64(a)/float64(b))
}

// BenchmarkCompaction stores the Rust original's fixture and prints, in one
// table, what it costs in rook and in the stores users have today,
// measured in the same run on the same events.
func BenchmarkCompaction(b *testing.B) {
	fx := CompactionFixture(*flagTurns, *flagFiles, *flagRereads)
	var res rookResult
	for i := 0; i < b.N; i++ {
		res = storeFixture(b, fx)
	}
	b.ReportMetric(float64(res.Total)/(1<<20), "MiB-on-disk")
	b.ReportMetric(float64(fx.Logical)/float64(res.Total), "x-end-to-end")
	printCompaction(b, fx, res)
}

var printedCompaction = map[string]bool{}

func printCompaction(b *testing.B, fx Fixture, res rookResult) {
	if printedCompaction[fx.Name] {
		return
	}
	printedCompaction[fx.Name] = true
	w := os.Stdout
	fmt.Fprintf(w, "\ntranscript: %s\n", fx.Name)
	fmt.Fprintf(w, "  %-44s %s\n", "logical bytes written by the agent", mib(fx.Logical))
	fmt.Fprintf(w, "  %-44s %s %s  (%d objects)\n", "after dedup (distinct objects)", mib(fx.Distinct), ratio(fx.Logical, fx.Distinct), fx.Objects)
	fmt.Fprintf(w, "  %-44s %s %s\n", "rook: stored, plain zstd (packed blocks)", mib(res.Plain), ratio(fx.Distinct, res.Plain))
	fmt.Fprintf(w, "  %-44s %s %s\n", "rook: stored, trained dictionaries", mib(res.WithDicts), ratio(fx.Distinct, res.WithDicts))
	fmt.Fprintf(w, "  %-44s %s %s end to end\n", "rook: on disk, every byte under the store", mib(res.Total), ratio(fx.Logical, res.Total))
	d := res.Disk
	fmt.Fprintf(w, "  %-44s index %s, segments %s, event log %s, dictionaries %s, other %s\n", "  of which",
		mib(d.Index), mib(d.Segments), mib(d.Events), mib(d.Dicts), mib(res.Total-d.Index-d.Segments-d.Events-d.Dicts))
	for _, t := range res.Dicts {
		if t.Kept {
			fmt.Fprintf(w, "  %-44s %s: %d bytes from %d samples\n", "  dictionary", t.KindName, t.DictBytes, t.Samples)
		}
	}
	peers, err := AllPeers(b.TempDir(), fx.Events)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(w, "  the same events, stored the way other agents store them:\n")
	for _, p := range peers {
		switch {
		case !p.Measured:
			fmt.Fprintf(w, "  %-44s %12s  [%s]\n", p.Name, "-", p.Note)
		case p.Note != "":
			fmt.Fprintf(w, "  %-44s %s %s end to end  (%s)\n", p.Name, mib(p.Bytes), ratio(fx.Logical, p.Bytes), p.Note)
		default:
			fmt.Fprintf(w, "  %-44s %s %s end to end\n", p.Name, mib(p.Bytes), ratio(fx.Logical, p.Bytes))
		}
	}
	if fx.Name == CompactionFixture(3000, 64, 5).Name {
		fmt.Fprintf(w, "  the Rust original, as published (not measured here):\n")
		for _, p := range PublishedOriginal() {
			fmt.Fprintf(w, "  %-44s %s\n", p.Name, mib(p.Bytes))
		}
	}
}
