package agent

import (
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// streamEveryLine makes find and search stream every imported line with a
// cut string, for the test.
func streamEveryLine(t *testing.T) {
	t.Helper()
	old := streamLinesOver
	streamLinesOver = 0
	t.Cleanup(func() { streamLinesOver = old })
}

// streamQueries are queries of both find and search: words, a phrase,
// case, escapes (a quote, a newline), non-ASCII, a key.
var streamQueries = []string{"error", "func", "the file", "TODO", "import", "README.md", `"type"`, "\n", "é", "rook",
	"tool_use_id", "ü", "İstanbul", "k", "s", `\n`, "go test ./", "x", "--json", "a"}

// wholeSearchText is the reference: the line put together, its text
// taken whole (textOfImported) and scored whole (scoreBody).
func wholeSearchText(t *testing.T, r *Rook, obj cas.Key, terms [][]byte, seed maphash.Seed) (int, string, uint64) {
	t.Helper()
	b, imported, err := r.readBody(obj)
	if err != nil || !imported {
		t.Fatalf("%s: %v (imported %v)", cas.Short(obj), err, imported)
	}
	text := textOfImported(b)
	score, snip := scoreBody(text, terms)
	return score, snip, maphash.Bytes(seed, text)
}

// compareStreamedSearch checks every imported line of session id with a
// cut string: searchText gives what the whole path gives, or declines.
func compareStreamedSearch(t *testing.T, r *Rook, id eventlog.ID, queries []string) (streamed, whole int) {
	t.Helper()
	seed := maphash.MakeSeed()
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		s, err := r.openStreamed(ev.Body, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			continue
		}
		if b, _, _ := r.readBody(ev.Body); int64(len(b)) != s.total {
			t.Fatalf("#%d: total %d, the line has %d bytes", ev.Seq, s.total, len(b))
		}
		for _, q := range queries {
			terms := SearchTerms(q)
			if len(terms) == 0 {
				continue
			}
			lowered := make([][]byte, len(terms))
			for i, t := range terms {
				lowered[i] = []byte(t)
			}
			score, snip, h, err := r.searchText(s, lowered, seed)
			if err == errNotStreamed {
				whole++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			streamed++
			wScore, wSnip, wH := wholeSearchText(t, r, ev.Body, lowered, seed)
			if score != wScore || snip != wSnip || score > 0 && h != wH {
				t.Fatalf("#%d %q: streamed %d %q %x, whole %d %q %x", ev.Seq, q, score, snip, h, wScore, wSnip, wH)
			}
		}
	}
	return streamed, whole
}

// importCorpus imports the shared corpus of Claude Code transcripts into
// a new store.
func importCorpus(t *testing.T) (*Rook, []eventlog.ID) {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	var paths []string
	filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			paths = append(paths, p)
		}
		return nil
	})
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var abs []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(corpusDir, p)
		writeSourceFile(t, fsys, filepath.Join("/src", rel), data)
		abs = append(abs, filepath.Join("/src", rel))
	}
	rep := mustImport(t, r, FormatClaudeCode, abs...)
	var ids []eventlog.ID
	for _, f := range rep.Files {
		if f.Session != nil {
			ids = append(ids, *f.Session)
		}
	}
	return r, ids
}

// Every imported line of the shared corpus with a cut string scores,
// streamed, as it does whole, for every query; and a whole search of the
// store, streamed, is the search read whole.
func TestStreamedSearchOfTheCorpusMatchesWhole(t *testing.T) {
	r, ids := importCorpus(t)
	streamEveryLine(t)
	streamed, whole := 0, 0
	for _, id := range ids {
		s, w := compareStreamedSearch(t, r, id, streamQueries)
		streamed, whole = streamed+s, whole+w
	}
	t.Logf("%d sessions: %d line×query streamed, %d read whole", len(ids), streamed, whole)
	if len(ids) < 20 || streamed < 1000 {
		t.Fatalf("%d sessions, %d streamed: the test reads too few", len(ids), streamed)
	}
	for _, q := range streamQueries {
		if len(SearchTerms(q)) == 0 {
			continue
		}
		readWhole = true
		want, werr := r.Search(q, SearchOptions{Limit: 1000})
		readWhole = false
		got, gerr := r.Search(q, SearchOptions{Limit: 1000})
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
			t.Fatalf("search %q: streamed %+v (%v), whole %+v (%v)", q, got, gerr, want, werr)
		}
	}
}
