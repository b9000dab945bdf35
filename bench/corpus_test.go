package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// corpusDir holds real Claude Code transcripts (shared/corpus, beside the
// repository), one JSONL file per session or subagent.
var corpusDir = filepath.Join("..", "..", "shared", "corpus", "claude-code")

// corpusFile is one transcript, read as rook events: one note per line,
// labelled with the line's "type", the raw line as the body.
type corpusFile struct {
	path   string
	size   int64
	data   []byte // the file, which the events' bodies are lines of
	events []Event
}

// corpusBytes is the corpus's files concatenated, in order: what the
// whole-input compressors are given.
func corpusBytes(files []corpusFile) []byte {
	var all []byte
	for _, f := range files {
		all = append(all, f.data...)
	}
	return all
}

func readCorpus(root string) ([]corpusFile, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(p) == ".jsonl" {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []corpusFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f := corpusFile{path: p, size: int64(len(data)), data: data}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(line, &head) // a line that is not JSON keeps no label
			label := head.Type
			if len(label) > eventlog.MaxLabel {
				label = label[:eventlog.MaxLabel]
			}
			f.events = append(f.events, Event{Kind: eventlog.KindNote, Label: label, Body: line})
		}
		out = append(out, f)
	}
	return out, nil
}

// corpusResult is what the corpus costs, in rook and whole-file zstd.
type corpusResult struct {
	files, events   int
	in              int64 // bytes of the input files
	rookPlain, rook int64 // every byte under the store: before, after training and repacking
	zstd3, zstd19   int64 // the concatenated input compressed whole
	xz              int64 // the same by the xz tool, -9e (0: not installed)
	// ids, idBytes: the distinct random ids in the input and their random
	// bits, in bytes: what no lossless store can take less than.
	ids     int
	idBytes int64
	// splitSource and splitStrings: what the importer stores (the lines
	// without their long strings, and the distinct strings), each part
	// concatenated in the order written and compressed whole by zstd -19.
	splitSource, splitStrings int64
	peers                     []PeerResult
	dicts                     []cas.TrainResult
	stats                     cas.Stats // the store's, after repacking
	imp                       agent.ImportReport
	importTime                time.Duration // rook import of every file, syncs included
	zstd3Time                 time.Duration // zstd -3 of the concatenated input, one thread
	exact                     int           // sessions exported byte for byte
}

// idPattern matches the random ids of Claude Code and Codex transcripts:
// UUIDs (entries, sessions, parents) and the API's toolu_, msg_, req_ ids.
var idPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:toolu|msg|req)_[0-9A-Za-z]{20,40}`)

// randomIDs counts the distinct ids in data and the bytes of randomness
// they carry: 122 bits for a UUID (v4: 6 of its 128 bits are fixed), and
// log2(62) bits for each base-62 character of an API id after its prefix
// and its 2-character version ("toolu_01..."). Each id counts once: a
// repeat of one costs a store next to nothing, a new one costs its bits.
func randomIDs(data []byte) (n int, size int64) {
	seen := map[string]bool{}
	bits := 0.0
	for _, id := range idPattern.FindAll(data, -1) {
		if seen[string(id)] {
			continue
		}
		seen[string(id)] = true
		if len(id) == 36 && id[8] == '-' {
			bits += 122
		} else {
			random := len(id) - (strings.IndexByte(string(id), '_') + 1) - 2
			bits += float64(random) * math.Log2(62)
		}
	}
	return len(seen), int64(bits / 8)
}

// splitFloor compresses the objects an import stored, in the order it
// wrote them, as two wholes: the source lines (what is left of each line
// once its long strings are cut out, with the ids naming them) and every
// other object (the strings, each once). That is what the importer's
// split of the bytes would take with a compressor that sees everything at
// once and gives up random access: a floor for blocks of any size.
func splitFloor(s *cas.Store) (source, strs int64, err error) {
	objs, err := s.List(0, 0)
	if err != nil {
		return 0, 0, err
	}
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		return a.Segment < b.Segment || a.Segment == b.Segment && a.Offset < b.Offset
	})
	var src, other []byte
	for _, o := range objs {
		data, err := s.Get(o.ID)
		if err != nil {
			return 0, 0, err
		}
		if o.Kind == cas.KindSource {
			src = append(src, data...)
		} else {
			other = append(other, data...)
		}
	}
	zs, err := peerZstd(src, 19)
	if err != nil {
		return 0, 0, err
	}
	zo, err := peerZstd(other, 19)
	return int64(len(zs)), int64(len(zo)), err
}

// storeCorpus runs `rook import claude-code` on the corpus into a new
// store, then trains dictionaries and repacks, as `rook store maintain`
// does, measures every byte under the store and exports every session back
// to check it against its file.
func storeCorpus(dir string, c *corpusResult) (err error) {
	home := filepath.Join(dir, "store")
	if _, err = cas.Init(nil, nil, home); err != nil {
		return
	}
	r, err := agent.Open(home, agent.Options{Writable: true})
	if err != nil {
		return
	}
	defer func() {
		if r != nil {
			if cerr := r.Close(); err == nil {
				err = cerr
			}
		}
		c.rook = peerDirBytes(home)
	}()
	start := time.Now()
	if c.imp, err = r.Import(agent.ImportOptions{Format: agent.FormatClaudeCode, Paths: []string{corpusDir}}); err != nil {
		return
	}
	if c.imp.Failed > 0 {
		return fmt.Errorf("import: %d file(s) failed: %+v", c.imp.Failed, c.imp.Problems)
	}
	// What the import leaves once the store is closed, as `rook import`
	// does: the index is committed at Close (until then the segments alone
	// name the newest objects), so measuring before would leave it out.
	err = r.Close()
	c.importTime = time.Since(start)
	if r = nil; err != nil {
		return
	}
	c.rookPlain = peerDirBytes(home)
	if r, err = agent.Open(home, agent.Options{Writable: true}); err != nil {
		return
	}
	if c.splitSource, c.splitStrings, err = splitFloor(r.Store); err != nil {
		return
	}
	if c.dicts, err = r.Store.Train(cas.TrainOptions{}); err != nil {
		return
	}
	if _, err = r.Store.Repack(nil); err != nil {
		return
	}
	if c.stats, err = r.Store.Stats(); err != nil {
		return
	}
	for _, f := range c.imp.Files {
		want, err := os.ReadFile(f.Path)
		if err != nil {
			return err
		}
		h := sha256.New()
		x, err := r.ExportSource(*f.Session, h)
		if err != nil {
			return err
		}
		if x.Exact && x.SHA256 == fmt.Sprintf("%x", sha256.Sum256(want)) {
			c.exact++
		}
	}
	return nil
}

var (
	corpusOnce sync.Once
	corpusRes  corpusResult
	corpusErr  error
)

// BenchmarkCorpus stores the real transcripts in shared/corpus in rook and
// reports what they take on disk beside the whole-file zstd of the same
// bytes (the floor for a compressor that gives up random access) and the
// peers that keep one row or one blob per line. The work is done once; the
// metrics are per corpus, not per iteration.
func BenchmarkCorpus(b *testing.B) {
	if _, err := os.Stat(corpusDir); err != nil {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	for i := 0; i < b.N; i++ {
		corpusOnce.Do(func() { corpusRes, corpusErr = runCorpus() })
	}
	if corpusErr != nil {
		b.Fatal(corpusErr)
	}
	c := corpusRes
	if c.files == 0 {
		b.Skipf("no *.jsonl under %s", corpusDir)
	}
	b.ReportMetric(float64(c.in), "bytes-in")
	b.ReportMetric(float64(c.rook), "bytes-rook")
	b.ReportMetric(float64(c.in)/float64(c.rook), "x-rook")
	b.ReportMetric(float64(c.in)/float64(c.zstd3), "x-zstd3")
	b.ReportMetric(float64(c.in)/float64(c.zstd19), "x-zstd19")
}

func runCorpus() (c corpusResult, err error) {
	files, err := readCorpus(corpusDir)
	if err != nil || len(files) == 0 {
		return c, err
	}
	dir, err := os.MkdirTemp("", "rook-bench-corpus")
	if err != nil {
		return c, err
	}
	defer os.RemoveAll(dir)

	all := corpusBytes(files)
	var events []Event
	for _, f := range files {
		c.files++
		c.events += len(f.events)
		c.in += f.size
		events = append(events, f.events...)
	}
	if err := storeCorpus(dir, &c); err != nil {
		return c, err
	}
	for _, z := range []struct {
		level int
		out   *int64
		took  *time.Duration
	}{{3, &c.zstd3, &c.zstd3Time}, {19, &c.zstd19, nil}} {
		start := time.Now()
		data, err := peerZstd(all, z.level)
		if err != nil {
			return c, err
		}
		if z.took != nil {
			*z.took = time.Since(start)
		}
		*z.out = int64(len(data))
	}
	if c.xz, _, err = peerXZ(all); err != nil {
		return c, err
	}
	c.ids, c.idBytes = randomIDs(all)
	// The peers that keep a row or a blob per event, all files as one
	// session (their size barely depends on how lines are split into
	// sessions).
	for _, p := range []struct {
		name string
		run  func(string) ([]PeerResult, error)
	}{
		{"sqlite", func(d string) ([]PeerResult, error) {
			r, err := PeerSQLite(d, events)
			return []PeerResult{r}, err
		}},
		{"git", func(d string) ([]PeerResult, error) { return PeerGit(d, events) }},
	} {
		d := filepath.Join(dir, p.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, err
		}
		rs, err := p.run(d)
		if err != nil {
			return c, fmt.Errorf("%s: %w", p.name, err)
		}
		c.peers = append(c.peers, rs...)
	}
	printCorpus(c)
	return c, nil
}

func printCorpus(c corpusResult) {
	w := os.Stdout
	m := func(n int64) string { return fmt.Sprintf("%8.2f MiB", float64(n)/(1<<20)) }
	x := func(n int64) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("%6.1fx", float64(c.in)/float64(n))
	}
	fmt.Fprintf(w, "\ncorpus: %s (%d files, %d lines)\n", corpusDir, c.files, c.events)
	fmt.Fprintf(w, "  %-44s %s\n", "bytes in (JSONL as written by Claude Code)", m(c.in))
	fmt.Fprintf(w, "  %-44s %s %s  (%d sessions, %d events; %d of %d exported byte-exact)\n", "rook import, on disk", m(c.rookPlain), x(c.rookPlain),
		c.imp.Sessions, c.imp.Events, c.exact, len(c.imp.Files))
	fmt.Fprintf(w, "  %-44s %s %s\n", "rook on disk, trained dictionaries + repack", m(c.rook), x(c.rook))
	fmt.Fprintf(w, "  %-44s %s %s  (no random access)\n", "JSONL concatenated, zstd -3 whole", m(c.zstd3), x(c.zstd3))
	fmt.Fprintf(w, "  %-44s %s %s  (no random access)\n", "JSONL concatenated, zstd -19 whole", m(c.zstd19), x(c.zstd19))
	fmt.Fprintf(w, "  %-44s %s %s  (no random access; lines %.2f + strings %.2f MiB, no index or log)\n", "rook's split of the bytes, zstd -19 whole", m(c.splitSource+c.splitStrings), x(c.splitSource+c.splitStrings),
		float64(c.splitSource)/(1<<20), float64(c.splitStrings)/(1<<20))
	if c.xz > 0 {
		fmt.Fprintf(w, "  %-44s %s %s  (no random access; the xz tool, measured in this run)\n", "JSONL concatenated, xz -9e whole", m(c.xz), x(c.xz))
	} else {
		fmt.Fprintf(w, "  %-44s %12s  [xz not installed]\n", "JSONL concatenated, xz -9e whole", "-")
	}
	fmt.Fprintf(w, "  %-44s %s %s  (%d distinct ids: their random bits alone, which no lossless store can shrink)\n", "random ids in the JSONL (uuid, toolu_...)", m(c.idBytes), x(c.idBytes), c.ids)
	for _, p := range c.peers {
		if !p.Measured {
			fmt.Fprintf(w, "  %-44s %12s  [%s]\n", p.Name, "-", p.Note)
			continue
		}
		fmt.Fprintf(w, "  %-44s %s %s  (%s)\n", p.Name, m(p.Bytes), x(p.Bytes), p.Note)
	}
	mbps := func(d time.Duration) float64 { return float64(c.in) / (1 << 20) / d.Seconds() }
	fmt.Fprintf(w, "  %-44s %8.1f MiB/s  (%v)\n", "speed: rook import (parse, split, store, sync)", mbps(c.importTime), c.importTime.Round(time.Millisecond))
	fmt.Fprintf(w, "  %-44s %8.1f MiB/s  (%v)  rook/zstd = %.2f\n", "speed: zstd -3 of the same bytes, 1 thread", mbps(c.zstd3Time), c.zstd3Time.Round(time.Millisecond),
		c.zstd3Time.Seconds()/c.importTime.Seconds())
	st := c.stats
	fmt.Fprintf(w, "  %-44s %s in %d objects, stored as %s (%d repeated puts not written again)\n", "  rook: distinct objects", m(st.Size), st.Objects, m(st.Stored), st.RepeatedPuts)
	d := st.Disk
	fmt.Fprintf(w, "  %-44s index %s, segments %s, event log %s, dictionaries %s, other %s\n", "  of which",
		m(d.Index), m(d.Segments), m(d.Events), m(d.Dicts), m(c.rook-d.Index-d.Segments-d.Events-d.Dicts))
	for _, t := range c.dicts {
		if t.Kept {
			fmt.Fprintf(w, "  %-44s %s: %d bytes from %d samples\n", "  dictionary", t.KindName, t.DictBytes, t.Samples)
		}
	}
}
