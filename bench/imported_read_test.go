package bench

import (
	"os"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/eventlog"
)

// importedStore imports the corpus into a fresh store and names its
// longest session.
func importedStore(b *testing.B) (string, eventlog.ID) {
	if _, err := os.Stat(corpusDir); err != nil {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	r, home := newRook(b)
	defer r.Close()
	if _, err := r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{corpusDir}}); err != nil {
		b.Fatal(err)
	}
	ids, err := r.Log.IDs()
	if err != nil {
		b.Fatal(err)
	}
	var longest eventlog.ID
	most := uint64(0)
	for _, id := range ids {
		if s, err := r.Log.Summary(id); err == nil && s.Events > most {
			most, longest = s.Events, id
		}
	}
	return home, longest
}

// BenchmarkImportedLastPage: what `rook session show` of an imported
// session reads, cold (a fresh open each time, as each command is): the
// newest 64 events of the corpus's longest session and their bodies. An
// import packs in bulk blocks (cas.Options.BulkBlockSize), and reading one
// object decompresses its whole block: this is what their size costs.
func BenchmarkImportedLastPage(b *testing.B) {
	home, id := importedStore(b)
	for b.Loop() {
		r, err := agent.Open(home, agent.Options{})
		if err != nil {
			b.Fatal(err)
		}
		readLastPage(b, r, id)
		r.Close()
	}
}

// BenchmarkImportedSearch: `rook search` over every imported session of
// the corpus, cold: each source line is read, its strings decoded
// (agent's textOfImported) and scored.
func BenchmarkImportedSearch(b *testing.B) {
	home, _ := importedStore(b)
	for b.Loop() {
		r, err := agent.Open(home, agent.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := r.Search("transcript renderer", agent.SearchOptions{})
		if err != nil || len(res.Hits) == 0 || res.Truncated {
			b.Fatalf("%d hits, truncated %v, %v", len(res.Hits), res.Truncated, err)
		}
		b.ReportMetric(float64(res.BytesScanned)/(1<<20), "MiB-scanned/op")
		r.Close()
	}
}
