package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// importedStore imports the corpus into a fresh store and names its
// longest session.
func importedStore(b *testing.B) (string, eventlog.ID) {
	if _, err := os.Stat(corpusDir); err != nil {
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
		s, err := r.Log.Summary(id)
		if err != nil {
			b.Fatal(err)
		}
		evs, err := r.Log.ReadBefore(id, s.Events, 64)
		if err != nil || len(evs) != 64 {
			b.Fatal(len(evs), err)
		}
		for _, ev := range evs {
			if _, err := r.Body(ev); err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
}
