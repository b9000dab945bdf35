//go:build unix

package agent

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// listStore is a store on disk with n sessions of 1 to 200 events each
// (a fork of every 100th) in 10 workspaces, made through the agent API,
// its writer closed: what `rook session ls` reads.
func listStore(b *testing.B, n int) string { return listStoreIn(b, n, 10) }

// listStoreIn is listStore with the sessions spread over workspaces
// /work/ws0, /work/ws1... in turn.
func listStoreIn(b *testing.B, n, workspaces int) string {
	b.Helper()
	home := b.TempDir()
	if _, err := cas.Init(vfs.OS, clock.System, home); err != nil {
		b.Fatal(err)
	}
	r, err := Open(home, Options{Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	r.Log.SetBulk(true)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		m, err := r.NewSession(fmt.Sprintf("session %d", i), fmt.Sprintf("/work/ws%d", i%workspaces), nil)
		if err != nil {
			b.Fatal(err)
		}
		k := 1 + rng.Intn(200)
		for j := 0; j < k; j++ {
			e := Entry{Kind: eventlog.KindUser, Label: fmt.Sprintf("user %d", j), Body: []byte(fmt.Sprintf("body %d %d", i, j)), TokensIn: uint64(rng.Intn(1000)), TokensOut: uint64(rng.Intn(100))}
			if _, err := r.Append(m.ID, e); err != nil {
				b.Fatal(err)
			}
		}
		if i%100 == 99 {
			if _, err := r.Log.Fork(m.ID, uint64(k/2), eventlog.Meta{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	return home
}

// BenchmarkSessions is the listing `rook session ls` makes: every
// session's summary, most recently active first, read by a reader.
func BenchmarkSessions(b *testing.B) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			home := listStore(b, n)
			r, err := Open(home, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				ss, err := r.Log.Sessions()
				if err != nil {
					b.Fatal(err)
				}
				if len(ss) != n+n/100 {
					b.Fatalf("%d sessions, want %d", len(ss), n+n/100)
				}
				SortByLastActive(ss)
			}
			// The machine may be shared: the process's CPU time (user
			// and system, every thread's) says more than the wall's.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkResolveLast is what every `rook session ... last` pays before
// its own work: finding the session of the workspace active last, among
// n sessions all in that workspace.
func BenchmarkResolveLast(b *testing.B) {
	for _, n := range []int{5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			home := listStoreIn(b, n, 1)
			r, err := Open(home, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			want, err := r.ResolveSession("last", "/work/ws0")
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				id, err := r.ResolveSession("last", "/work/ws0")
				if err != nil {
					b.Fatal(err)
				}
				if id != want {
					b.Fatalf("last is %s, was %s", id, want)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
