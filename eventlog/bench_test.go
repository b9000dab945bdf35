package eventlog

import (
	"fmt"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// benchStore is a store on disk holding n sessions of events events each,
// its writer closed.
func benchStore(b *testing.B, n, events int) (string, []ID) {
	b.Helper()
	dir := b.TempDir()
	l, err := Open(dir, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]ID, n)
	for i := range ids {
		m, err := l.Create(Meta{Title: "s"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = m.ID
		for j := 0; j < events; j++ {
			if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(j)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, ids
}

// BenchmarkFlushEachSessionOnce is a long-lived writer (an MCP server)
// that goes on, after a first barrier, with an event and a barrier in
// each of many sessions it had not touched: every barrier is the first in
// its session (the costliest case for the dirty marker).
func BenchmarkFlushEachSessionOnce(b *testing.B) {
	dir, ids := benchStore(b, b.N+1, 3)
	l, err := Open(dir, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ids[0], Event{Kind: KindUser, Body: body(0)}); err != nil {
		b.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		if _, err := l.Append(ids[i], Event{Kind: KindUser, Body: body(i)}); err != nil {
			b.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFlushSameSession is the steady state: an event and a barrier
// in a session the writer has touched already.
func BenchmarkFlushSameSession(b *testing.B) {
	dir, ids := benchStore(b, 1, 3)
	l, err := Open(dir, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(ids[0], Event{Kind: KindUser, Body: body(i)}); err != nil {
			b.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSmallReads is a reader's pages of 10 events while a writer is
// running (its dirty marker there) or not.
func BenchmarkSmallReads(b *testing.B) {
	for _, writer := range []bool{false, true} {
		b.Run(fmt.Sprintf("writer=%v", writer), func(b *testing.B) {
			dir, ids := benchStore(b, 1, 2000)
			if writer {
				w, err := Open(dir, Options{FS: vfs.OS, Writable: true})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				if _, err := w.Append(ids[0], Event{Kind: KindUser, Body: body(0)}); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			r, err := Open(dir, Options{FS: vfs.OS})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				evs, err := r.Read(ids[0], uint64(i*37%1990), 10)
				if err != nil || len(evs) != 10 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
		})
	}
}

// BenchmarkAppendShortEvents is an import's appends: many short events
// in bulk (a transcript's lines, labels of a few bytes, the odd group of
// two), into one session, its barriers every 256 KiB of records. Each
// append checks its records' bytes for a record where none starts
// (recordWatch): this measures what that costs.
func BenchmarkAppendShortEvents(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(dir, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	l.SetBulk(true)
	m, err := l.Create(Meta{Title: "import"})
	if err != nil {
		b.Fatal(err)
	}
	labels := []string{"user", "assistant", "progress", "Bash", "claude-opus-4-5"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := Event{Kind: KindAssistant, Body: body(i), Label: labels[i%len(labels)], TokensIn: uint64(i % 5000), TokensOut: 40}
		if i%7 == 0 {
			_, err = l.Append(m.ID, Event{Kind: KindToolCall, Body: body(i), Label: "Read"}, ev)
		} else {
			_, err = l.Append(m.ID, ev)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}
