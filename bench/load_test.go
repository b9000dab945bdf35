package bench

// The load test: what a turn costs as the session grows, and what a
// durable append costs beside the bare fdatasync it cannot beat.
//
//	go test -run '^$' -bench 'Load|DurableAppend' -benchtime 1x ./...
//
// BenchmarkLoad is a measurement, not a micro-benchmark: each part is run
// once per scale (the reads that are too quick to time alone are averaged
// over 100 calls), its cost per unit is reported as a metric of the
// sub-benchmark scale=N/part (ns/op is suppressed: it would only time the
// reporting), and a table of the three scales is printed at the end. Any
// -benchtime gives the same numbers; 1x spares the framework's ramp-up of
// the sub-benchmarks, which do no work of their own. -count repeats the
// report, not the measurement: for steadier numbers (one run is at the
// mercy of whatever else the machine does), -loadruns 5 runs each scale
// five times and reports each part's median run; -loadsteps changes the
// size.
//
//	go test -run '^$' -bench Load -benchtime 1x -loadruns 5 .

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

var (
	flagLoadSteps = flag.Int("loadsteps", 2000, "load test: steps (a message and its tool result) at scale 1")
	flagLoadRuns  = flag.Int("loadruns", 1, "load test: runs per scale, each part's median run reported")
)

// loadScales are the session sizes, in multiples of -loadsteps.
var loadScales = []int{1, 2, 4}

// loadPart is one part of the per-turn work.
type loadPart struct {
	name string
	unit string // what the cost is divided by
	// run does the part once on the scale's session and returns the time
	// taken and the units done. append builds the session; the others
	// read it through a read-only reopen of the store, as the CLI's views
	// do (with the files still in the page cache).
	run func(b *testing.B, l *loadSession) (time.Duration, int)
}

// loadSession is one scale's store and session.
type loadSession struct {
	home   string
	r      *agent.Rook // read-only, after append
	id     eventlog.ID
	events int
}

// Queries: each matches one event (step 7's tool result) at every scale,
// so find and search scan everything and format almost nothing. The find
// query has no k or s, so it takes find's ASCII path, as most queries do.
const (
	loadFindQuery   = "handler_7_39("
	loadSearchQuery = "handler_7_39 toolu_00000007"
)

const (
	loadPageReads = 100 // last page: reads averaged
	loadStatCalls = 100 // store stat: calls averaged
)

var loadParts = []loadPart{
	{"append", "event", func(b *testing.B, l *loadSession) (time.Duration, int) {
		w, err := agent.Open(l.home, agent.Options{Writable: true})
		if err != nil {
			b.Fatal(err)
		}
		var d time.Duration
		l.id, d = fill(b, w, l.events, 0) // 2 events a step, the barriers of issue 3 (every 256 events)
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		if l.r, err = agent.Open(l.home, agent.Options{}); err != nil {
			b.Fatal(err)
		}
		return d, l.events
	}},
	{"replay", "event", func(b *testing.B, l *loadSession) (time.Duration, int) {
		start := time.Now()
		n := 0
		for from := uint64(0); ; {
			evs, err := l.r.Log.Read(l.id, from, 1024)
			if err != nil {
				b.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				if _, err := l.r.Body(ev); err != nil {
					b.Fatal(err)
				}
			}
			n += len(evs)
			from = evs[len(evs)-1].Seq + 1
		}
		d := time.Since(start)
		if n != l.events {
			b.Fatalf("replayed %d of %d events", n, l.events)
		}
		return d, n
	}},
	{"last page", "page", func(b *testing.B, l *loadSession) (time.Duration, int) {
		start := time.Now()
		for i := 0; i < loadPageReads; i++ {
			s, err := l.r.Log.Summary(l.id)
			if err != nil {
				b.Fatal(err)
			}
			evs, err := l.r.Log.ReadBefore(l.id, s.Events, agent.DefaultPageEntries)
			if err != nil || len(evs) != agent.DefaultPageEntries {
				b.Fatal(len(evs), err)
			}
			for _, ev := range evs {
				if _, err := l.r.Body(ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		return time.Since(start), loadPageReads
	}},
	{"find", "event examined", func(b *testing.B, l *loadSession) (time.Duration, int) {
		start := time.Now()
		q := agent.FindQuery{Query: loadFindQuery}
		examined, hits, calls := 0, 0, 0
		for {
			res, err := l.r.Find(l.id, q)
			if err != nil {
				b.Fatal(err)
			}
			calls++
			examined += res.Examined
			hits += len(res.Hits)
			if res.Next == nil {
				break
			}
			q.From, q.Offset, q.Through = res.Next.From, res.Next.Offset, &res.Next.Through
		}
		d := time.Since(start)
		if examined != l.events || hits != 1 {
			b.Fatalf("find examined %d of %d events in %d calls, %d hits (want 1)", examined, l.events, calls, hits)
		}
		return d, examined
	}},
	{"search", "object scanned", func(b *testing.B, l *loadSession) (time.Duration, int) {
		start := time.Now()
		res, err := l.r.Search(loadSearchQuery, agent.SearchOptions{Session: &l.id})
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		// Every body is distinct: every event's body is scanned once.
		if res.Truncated || res.ObjectsScanned != l.events || res.TotalHits != 2 {
			b.Fatalf("search scanned %d of %d objects (truncated %v), %d hits (want 2)", res.ObjectsScanned, l.events, res.Truncated, res.TotalHits)
		}
		return d, res.ObjectsScanned
	}},
	{"context", "event", func(b *testing.B, l *loadSession) (time.Duration, int) {
		start := time.Now()
		rep, err := l.r.Context(l.id, agent.DefaultContextWindow)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if rep.EverEvents != int64(l.events) || rep.MissingBodies != 0 {
			b.Fatalf("context counted %d of %d events, %d missing bodies", rep.EverEvents, l.events, rep.MissingBodies)
		}
		return d, int(rep.EverEvents)
	}},
	{"store stat", "call", func(b *testing.B, l *loadSession) (time.Duration, int) {
		start := time.Now()
		for i := 0; i < loadStatCalls; i++ {
			st, err := l.r.Store.Stats()
			if err != nil {
				b.Fatal(err)
			}
			if st.Objects != int64(l.events) {
				b.Fatalf("stats: %d objects, want %d", st.Objects, l.events)
			}
		}
		return time.Since(start), loadStatCalls
	}},
}

// loadResult is one scale's per-unit costs, by part, in ns.
type loadResult struct {
	once    sync.Once
	perUnit []float64       // the median run's, by part
	total   []time.Duration // the same, the part's whole time
	ok      bool
}

// measure runs every part at one scale, in order (append builds the
// session the others read), -loadruns times on a new store each time, and
// keeps each part's median run. It is called from whichever of the scale's
// sub-benchmarks runs first, so -bench Load/scale=1 measures scale 1 only.
func (res *loadResult) measure(b *testing.B, scale int) {
	res.once.Do(func() {
		runs := max(*flagLoadRuns, 1)
		perUnit := make([][]float64, len(loadParts))
		total := make([][]time.Duration, len(loadParts))
		for run := 0; run < runs; run++ {
			l := &loadSession{home: filepath.Join(b.TempDir(), "store"), events: 2 * *flagLoadSteps * scale}
			initStore(b, l.home)
			for j, p := range loadParts {
				runtime.GC()
				d, units := p.run(b, l)
				total[j] = append(total[j], d)
				perUnit[j] = append(perUnit[j], float64(d.Nanoseconds())/float64(units))
			}
			if err := l.r.Close(); err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(l.home) // runs at scale 4 take 60 MB each
		}
		for j := range loadParts {
			// the median run by time (every run does the same units)
			order := make([]int, runs)
			for i := range order {
				order[i] = i
			}
			sort.Slice(order, func(x, y int) bool { return total[j][order[x]] < total[j][order[y]] })
			m := order[runs/2]
			res.perUnit = append(res.perUnit, perUnit[j][m])
			res.total = append(res.total, total[j][m])
		}
		res.ok = true
	})
	if !res.ok {
		b.Fatal("the measurement at this scale failed")
	}
}

// initStore makes an empty store at home, as newRook does.
func initStore(b *testing.B, home string) {
	if _, err := cas.Init(nil, nil, home); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLoad: the per-turn work on a session of 2,000 x scale steps
// (4,000 x scale events: a ~200 B message and a distinct ~3.4 KB tool
// result per step), at scales 1, 2 and 4. A part whose cost per unit rises
// more than 20% from scale 1 to 4 does not scale linearly, and is flagged.
func BenchmarkLoad(b *testing.B) {
	results := make([]*loadResult, len(loadScales))
	for i, scale := range loadScales {
		results[i] = &loadResult{}
		for j, p := range loadParts {
			b.Run(fmt.Sprintf("scale=%d/%s", scale, strings.ReplaceAll(p.name, " ", "_")), func(b *testing.B) {
				results[i].measure(b, scale)
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(results[i].perUnit[j], "ns/"+strings.ReplaceAll(p.unit, " ", "_"))
				b.ReportMetric(results[i].total[j].Seconds(), "s_total")
			})
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nload: %d steps x scale (2 events a step), ns per unit, median of %d run(s)\n", *flagLoadSteps, max(*flagLoadRuns, 1))
	fmt.Fprintf(&out, "%-11s %-15s", "part", "unit")
	for _, s := range loadScales {
		fmt.Fprintf(&out, " %12s", fmt.Sprintf("scale %d", s))
	}
	fmt.Fprintf(&out, " %9s\n", "rise 1→4")
	first, last := results[0], results[len(results)-1]
	for j, p := range loadParts {
		fmt.Fprintf(&out, "%-11s %-15s", p.name, p.unit)
		for _, res := range results {
			if res.ok {
				fmt.Fprintf(&out, " %12.0f", res.perUnit[j])
			} else {
				fmt.Fprintf(&out, " %12s", "-")
			}
		}
		if first.ok && last.ok {
			rise := last.perUnit[j]/first.perUnit[j] - 1
			fmt.Fprintf(&out, " %+8.0f%%", rise*100)
			if rise > 0.20 {
				out.WriteString("  RISES")
			}
		}
		out.WriteString("\n")
	}
	fmt.Print(out.String())
}

// BenchmarkDurableAppend: one event made durable on its own, beside the
// floor it stands on: the same record's bytes appended to a plain file and
// synced (fdatasync, and fsync, which rook's barriers use). rook's append
// is durable at a barrier (every 256 events, or a Flush); with a Flush
// after every event it pays a whole barrier per event: the new body's
// block written and synced into a segment, the index committed, and the
// record written and synced into the log. Run it with a real -benchtime:
// at 1x each figure is a single fsync.
func BenchmarkDurableAppend(b *testing.B) {
	// The bytes of one event record, as rook writes it.
	rec := oneRecord(b)
	floor := map[string]float64{}
	floorN := 0 // appends timed for the fdatasync floor
	sub := func(name string, syncf func(*os.File) error) {
		b.Run("floor/"+name, func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.Write(rec); err != nil {
					b.Fatal(err)
				}
				if err := syncf(f); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			floor[name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if name == "fdatasync" {
				floorN = b.N
			}
			b.ReportMetric(float64(len(rec)), "B/record")
		})
	}
	sub("fdatasync", func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) })
	sub("fsync", func(f *os.File) error { return f.Sync() })

	rook := map[string]float64{}
	through := func(name string, body func(i int) []byte) {
		b.Run(name, func(b *testing.B) {
			r, _ := newRook(b)
			defer r.Close()
			m, err := r.NewSession("durable", "/bench", nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Append(m.ID, agent.Entry{Kind: eventlog.KindAssistant, Label: "model", Body: body(-1)}); err != nil {
				b.Fatal(err)
			}
			if err := r.Flush(); err != nil { // the first barrier also marks the log in use
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Append(m.ID, agent.Entry{Kind: eventlog.KindAssistant, Label: "model", Body: body(i), TokensIn: 18000, TokensOut: 120}); err != nil {
					b.Fatal(err)
				}
				if err := r.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			rook[name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if f := floor["fdatasync"]; f > 0 {
				b.ReportMetric(rook[name]/f, "x_fdatasync")
			}
		})
	}
	// A new body each time, as an agent's messages are: the barrier syncs
	// the segment, commits the index (nodes, then meta: two syncs) and
	// syncs the log, 4 fsyncs an append (strace: 4,058 for 1,000 appends).
	through("rook", func(i int) []byte { return turnMessage(i) })
	// A body the store already holds: no segment write and no index node,
	// but the counters' commit and the log, 2 fsyncs an append.
	known := turnMessage(0)
	through("rook-known-body", func(int) []byte { return known })

	if f := floor["fdatasync"]; f > 0 && rook["rook"] > 0 {
		fmt.Printf("\ndurable append (%d B record): floor fdatasync %.0f ns, fsync %.0f ns; rook Append+Flush %.0f ns = %.2fx the fdatasync floor (target 1.5x)",
			len(rec), f, floor["fsync"], rook["rook"], rook["rook"]/f)
		if k := rook["rook-known-body"]; k > 0 {
			fmt.Printf("; with a known body %.0f ns = %.2fx", k, k/f)
		}
		if floorN < 100 {
			fmt.Printf(" (from %d sample(s): not a measurement, use -benchtime 2s)", floorN)
		}
		fmt.Println()
	}
}

// oneRecord returns the bytes of one event record as rook writes it: the
// log's growth from one durable append of an assistant message.
func oneRecord(b *testing.B) []byte {
	r, home := newRook(b)
	m, err := r.NewSession("record", "/bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(home, cas.EventsDir, m.ID.String()+".log")
	var sizes []int64
	for i := 0; i < 2; i++ {
		if _, err := r.Append(m.ID, agent.Entry{Kind: eventlog.KindAssistant, Label: "model", Body: turnMessage(i), TokensIn: 18000, TokensOut: 120}); err != nil {
			b.Fatal(err)
		}
		if err := r.Flush(); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		sizes = append(sizes, st.Size())
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data[sizes[0]:sizes[1]]
}
