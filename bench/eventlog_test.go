package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// turnMessage is the Rust original's load-test message (upstream-store.md,
// 2.2): distinct per step, about 200 bytes.
func turnMessage(step int) []byte {
	return []byte(fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%08x","name":"read_file","input":{"path":"crates/rook-core/src/turn_%d.rs"}}],"usage":{"input_tokens":%d,"output_tokens":120}}`, step, step, 18000+step))
}

// turnResult is its tool result: about 3.3 KB, distinct per step.
func turnResult(step int) []byte {
	var b bytes.Buffer
	for line := 0; line < 40; line++ {
		fmt.Fprintf(&b, "    pub fn handler_%d_%d(&self) -> Result<Response> {\n        self.dispatch()\n    }\n", step, line)
	}
	return b.Bytes()
}

func newRook(b *testing.B) (*agent.Rook, string) {
	b.Helper()
	home := filepath.Join(b.TempDir(), "store")
	if _, err := cas.Init(nil, nil, home); err != nil {
		b.Fatal(err)
	}
	r, err := agent.Open(home, agent.Options{Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	return r, home
}

// fill appends n events (a message and its tool result per step) to a new
// session, with the default barriers (every 256 events) and, when flushEvery
// is not 0, a Flush after every flushEvery events (an agent that makes each
// turn durable as it ends), and a Flush at the end.
//
// The bodies are made before the clock starts (the caller's timer runs
// through fill; making them is not the store's work).
func fill(b *testing.B, r *agent.Rook, n, flushEvery int) (eventlog.ID, time.Duration) {
	b.StopTimer()
	bodies := make([][]byte, n)
	for i := range bodies {
		if i%2 == 0 {
			bodies[i] = turnMessage(i / 2)
		} else {
			bodies[i] = turnResult(i / 2)
		}
	}
	m, err := r.NewSession("bench", "/bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	for i := 0; i < n; i++ {
		e := agent.Entry{Kind: eventlog.KindAssistant, Label: "model", Body: bodies[i], TokensIn: 18000, TokensOut: 120}
		if i%2 == 1 {
			e = agent.Entry{Kind: eventlog.KindToolResult, Label: "read_file", Body: bodies[i]}
		}
		if _, err := r.Append(m.ID, e); err != nil {
			b.Fatal(err)
		}
		if flushEvery > 0 && i%flushEvery == flushEvery-1 {
			if err := r.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	return m.ID, time.Since(start)
}

// BenchmarkAppend: the cost of appending an event, body stored and
// barriers included, at 2,000 and at 4x that many events (a per-event cost
// that rises with the count is not linear): with the barriers alone (every
// 256 events), and with a Flush after every 20 events as well.
func BenchmarkAppend(b *testing.B) {
	for _, flush := range []int{0, 20} {
		for _, n := range []int{2000, 8000} {
			benchAppend(b, n, flush)
		}
	}
}

func benchAppend(b *testing.B, n, flush int) {
	name := fmt.Sprintf("barriers/events=%d", n)
	if flush > 0 {
		name = fmt.Sprintf("flush-every-%d/events=%d", flush, n)
	}
	b.Run(name, func(b *testing.B) {
		for it := 0; it < b.N; it++ {
			b.StopTimer()
			r, _ := newRook(b)
			b.StartTimer()
			fill(b, r, n, flush)
			b.StopTimer()
			r.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
}

var (
	pageOnce  sync.Once
	pageRook  *agent.Rook
	pageIDs   = map[int]eventlog.ID{}
	pageSizes = []int{1000, 100000}
)

// BenchmarkLastPage: reading the newest page (64 events, records and
// bodies) of a 1k-event and of a 100k-event session.
func BenchmarkLastPage(b *testing.B) {
	pageOnce.Do(func() {
		r, home := newRook(b)
		for _, n := range pageSizes {
			pageIDs[n], _ = fill(b, r, n, 0)
		}
		r.Close()
		var err error
		pageRook, err = agent.Open(home, agent.Options{})
		if err != nil {
			b.Fatal(err)
		}
	})
	for _, n := range pageSizes {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			id := pageIDs[n]
			for it := 0; it < b.N; it++ {
				readLastPage(b, pageRook, id)
			}
		})
	}
}

// readLastPage reads a session's newest 64 events and their bodies, as
// `rook session show` does.
func readLastPage(b *testing.B, r *agent.Rook, id eventlog.ID) {
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
}

// BenchmarkReplay: every event of a 3,000-turn session with its body, from
// rook (records read in pages, bodies read and hash-verified), beside the
// same transcript decoded from JSONL with encoding/json, as a Claude Code
// style transcript is read.
func BenchmarkReplay(b *testing.B) {
	const turns = 3000
	r, home := newRook(b)
	id, _ := fill(b, r, 2*turns, 0)
	r.Close()
	jsonl := filepath.Join(b.TempDir(), "transcript.jsonl")
	f, err := os.Create(jsonl)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	type line struct {
		Seq       int    `json:"seq"`
		Kind      string `json:"kind"`
		Label     string `json:"label"`
		Body      string `json:"body"`
		TokensIn  int    `json:"tokens_in"`
		TokensOut int    `json:"tokens_out"`
	}
	enc := json.NewEncoder(w)
	for i := 0; i < 2*turns; i++ {
		l := line{Seq: i, Kind: "assistant", Label: "model", Body: string(turnMessage(i / 2)), TokensIn: 18000, TokensOut: 120}
		if i%2 == 1 {
			l = line{Seq: i, Kind: "tool-result", Label: "read_file", Body: string(turnResult(i / 2))}
		}
		if err := enc.Encode(l); err != nil {
			b.Fatal(err)
		}
	}
	w.Flush()
	f.Close()

	b.Run("rook", func(b *testing.B) {
		rr, err := agent.Open(home, agent.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer rr.Close()
		b.ResetTimer()
		for it := 0; it < b.N; it++ {
			n := 0
			for from := uint64(0); ; {
				evs, err := rr.Log.Read(id, from, 1024)
				if err != nil {
					b.Fatal(err)
				}
				if len(evs) == 0 {
					break
				}
				for _, ev := range evs {
					if _, err := rr.Body(ev); err != nil {
						b.Fatal(err)
					}
				}
				n += len(evs)
				from = evs[len(evs)-1].Seq + 1
			}
			if n != 2*turns {
				b.Fatalf("replayed %d events", n)
			}
		}
	})
	b.Run("jsonl", func(b *testing.B) {
		for it := 0; it < b.N; it++ {
			f, err := os.Open(jsonl)
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			n := 0
			for sc.Scan() {
				var l line
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					b.Fatal(err)
				}
				n++
			}
			f.Close()
			if n != 2*turns {
				b.Fatalf("decoded %d lines", n)
			}
		}
	})
}
