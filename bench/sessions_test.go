package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/cli"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// flagListSizes: the store sizes (sessions) BenchmarkSessionList and
// BenchmarkSessionLast run at; 200 keeps `make bench-smoke` quick, 5000
// and 20000 are what docs/performance.md measured:
//
//	go test -run '^$' -bench 'SessionList|SessionLast' -listsizes 5000,20000 ./...
var flagListSizes = flag.String("listsizes", "200", "session ls/last benchmarks: comma-separated numbers of sessions in the store")

// listWorkspaces is how many workspaces a listing store's sessions are
// spread over: plain `session ls` in one of them lists a tenth.
const listWorkspaces = 10

// listWorkspace is the i-th workspace of a listing store.
func listWorkspace(i int) string { return fmt.Sprintf("/work/ws%d", i) }

func listSizes(b *testing.B) []int {
	var out []int
	for _, f := range strings.Split(*flagListSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < listWorkspaces {
			b.Fatalf("-listsizes %q: want numbers of sessions, each at least %d", *flagListSizes, listWorkspaces)
		}
		out = append(out, n)
	}
	return out
}

// listStores are the stores made so far, by size: the two benchmarks
// share them (20,000 sessions take a while to make).
var listStores struct {
	sync.Mutex
	home map[int]string
	dir  string
}

// listStore is a store on disk with n sessions of 1 to 40 events each in
// listWorkspaces workspaces in turn, plus a fork of every 50th (at half
// its events; every other such fork in the next workspace, its parent not
// listed with it): made once per size, through the agent API, its writer
// closed. It lives in a directory of its own, removed when the process
// ends (b.TempDir's would go with the first benchmark).
func listStore(b *testing.B, n int) string {
	b.Helper()
	listStores.Lock()
	defer listStores.Unlock()
	if h, ok := listStores.home[n]; ok {
		return h
	}
	if listStores.home == nil {
		listStores.home = map[int]string{}
		dir, err := os.MkdirTemp("", "rook-bench-sessions")
		if err != nil {
			b.Fatal(err)
		}
		listStores.dir = dir
	}
	home := filepath.Join(listStores.dir, fmt.Sprintf("store-%d", n))
	if _, err := cas.Init(vfs.OS, clock.System, home); err != nil {
		b.Fatal(err)
	}
	r, err := agent.Open(home, agent.Options{Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	r.Log.SetBulk(true)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		m, err := r.NewSession(fmt.Sprintf("session %d", i), listWorkspace(i%listWorkspaces), nil)
		if err != nil {
			b.Fatal(err)
		}
		k := 1 + rng.Intn(40)
		entries := make([]agent.Entry, k)
		for j := range entries {
			entries[j] = agent.Entry{Kind: eventlog.KindUser, Label: "user", Body: fmt.Appendf(nil, "body %d %d", i, j),
				TokensIn: uint64(rng.Intn(1000)), TokensOut: uint64(rng.Intn(100))}
		}
		for len(entries) > 0 {
			chunk := entries[:min(len(entries), 16)] // what one Append takes
			entries = entries[len(chunk):]
			if _, err := r.Append(m.ID, chunk...); err != nil {
				b.Fatal(err)
			}
		}
		if i%50 == 49 {
			fm := eventlog.Meta{Title: fmt.Sprintf("fork of %d", i)}
			if i%100 == 99 {
				fm.Workspace = listWorkspace((i + 1) % listWorkspaces)
			}
			if _, err := r.Log.Fork(m.ID, uint64(k/2), fm); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	listStores.home[n] = home
	return home
}

// TestMain removes the listing stores once every benchmark has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if listStores.dir != "" {
		os.RemoveAll(listStores.dir)
	}
	os.Exit(code)
}

// BenchmarkSessionList is `rook --json session ls`, cold as a command is
// (the store opened, listed, closed), in one workspace of a store of n
// sessions (a tenth of them listed: "ws"), and with --all ("all").
func BenchmarkSessionList(b *testing.B) {
	for _, n := range listSizes(b) {
		for _, all := range []bool{false, true} {
			name := fmt.Sprintf("n=%d/ws", n)
			if all {
				name = fmt.Sprintf("n=%d/all", n)
			}
			b.Run(name, func(b *testing.B) {
				home := listStore(b, n)
				var out bytes.Buffer
				ls := func() {
					out.Reset()
					e := &cli.Env{Stdout: &out, Stderr: io.Discard, FS: vfs.OS, Clock: clock.System, JSON: true,
						Home: home, Cwd: listWorkspace(0), Command: "rook session ls"}
					if err := (&cli.SessionLsCmd{All: all}).Run(e); err != nil {
						b.Fatal(err)
					}
				}
				ls()
				rows := strings.Count(out.String(), `"id": `)
				if want := n/listWorkspaces + n/500; !all && rows < want {
					b.Fatalf("%d sessions listed, want at least %d", rows, want)
				}
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					ls()
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(rows), "rows")
			})
		}
	}
}

// BenchmarkSessionLast is what every `rook session ... last` pays before
// its own work, cold: the store opened, the session of the workspace
// active last found among n sessions (a tenth of them there), closed.
func BenchmarkSessionLast(b *testing.B) {
	for _, n := range listSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			home := listStore(b, n)
			last := func() eventlog.ID {
				r, err := agent.Open(home, agent.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				id, err := r.ResolveSession("last", listWorkspace(0))
				if err != nil {
					b.Fatal(err)
				}
				return id
			}
			want := last()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if id := last(); id != want {
					b.Fatalf("last is %s, was %s", id, want)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
