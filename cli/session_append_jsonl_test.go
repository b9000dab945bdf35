package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// TestAppendJSONLDiskFullNamesTheAtThatResumes (review rwriters):
// The user runs `rook session append S --jsonl events.jsonl` (20,000
// lines) and the disk fills part way. Seen by hand on a 30 MB tmpfs: it
// prints 9,984 seqs, then says "the 9984 line(s) printed are in (through
// line 9984)" and "... the disk holding the store ... is full: free space,
// then run the command again (it recovers what this one wrote)", exit 1.
// Running the command again, as told, appends all 20,000 lines again: the
// first 9,984 are in the session twice. README ("To make a long append safe
// to run again, give `--at SEQ` ... Without `--at`, running it again
// appends every line again") and the Ctrl-C/SIGTERM stop of the same
// command ("run it again with --at 0 to append the rest, each once") say
// the way to resume is `--at`; a failed run must say it too. Under --json
// the failure says nothing of which lines are in at all (the seqs are
// printed only in the final JSON, which a failed close never writes): the
// user cannot tell what to run again.
//
// Now: the error of a --jsonl run that fails part way names the `--at`
// that resumes it (here --at 0), text and --json alike (jsonlFailed;
// under --json, resume_at and done), and the lines after the failure are
// not tried (each was reported as a bad line). It used to print only "the
// N line(s) printed are in" (not under --json) and return the store's
// error as is.
func TestAppendJSONLDiskFullNamesTheAtThatResumes(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			const home = "/home/u/store"
			fsys := vfs.NewMem()
			if _, err := cas.Init(fsys, nil, home); err != nil {
				t.Fatal(err)
			}
			clk := &clock.Fixed{T: time.Date(2026, 2, 10, 21, 0, 0, 0, time.UTC)}
			var out, errb bytes.Buffer
			e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w"}
			if err := (&SessionNewCmd{Title: "full"}).Run(e); err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSpace(out.String())

			var lines strings.Builder
			for i := range 3000 {
				fmt.Fprintf(&lines, "{\"kind\":\"user\",\"body\":\"line %d %s\"}\n", i, strings.Repeat("x", 200+i%50))
			}
			path := filepath.Join(t.TempDir(), "events.jsonl")
			if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			// The disk fills once the segment has taken some writes: a
			// few barriers are durable by then.
			var writes atomic.Int64
			fsys.SetHook(func(op vfs.Op, p string) error {
				if op == vfs.OpWrite && strings.Contains(p, "/segments/") && writes.Add(1) > 4 {
					return syscall.ENOSPC
				}
				return nil
			})
			out.Reset()
			errb.Reset()
			e = &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w", JSON: asJSON}
			err := (&SessionAppendCmd{ID: id, File: "-", JSONL: nonEmpty(path)}).Run(e)
			if err == nil {
				t.Fatalf("append on a full disk succeeded; stdout %d bytes", out.Len())
			}
			said := errb.String() + "\n" + explain(err, home)
			t.Logf("said:\n%s", said)
			if !strings.Contains(said, "--at 0") {
				t.Errorf("a --jsonl append that failed part way (disk full) does not say how to resume it without appending the lines in again: want `--at 0` named, as a stopped run says")
			}
			// The lines after the failure are not tried, each said as a
			// bad line: the store failed, not they.
			if n := strings.Count(errb.String(), "rook: line "); n > 0 {
				t.Errorf("the lines after the store failed were reported as %d bad line(s)", n)
			}
			if asJSON {
				// Which lines are in, as fields: the report's shape, and
				// the --at that resumes.
				var jerr bytes.Buffer
				exitWith(&jerr, err, home, true)
				var got struct {
					ResumeAt *uint64 `json:"resume_at"`
					Done     struct {
						Appended []struct{ Line, Seq int } `json:"appended"`
						Already  *int                      `json:"already"`
						Errors   []any                     `json:"errors"`
					} `json:"done"`
				}
				if jerr := json.Unmarshal(jerr.Bytes(), &got); jerr != nil {
					t.Fatalf("the JSON error does not decode: %v", jerr)
				}
				if got.ResumeAt == nil || *got.ResumeAt != 0 || got.Done.Already == nil || got.Done.Errors == nil {
					t.Errorf("the JSON error %s has no resume_at 0 and done report", jerr.String())
				}
				if len(got.Done.Appended) == 0 {
					t.Errorf("done.appended is empty: the barriers before the disk filled made lines durable")
				}
				for i, a := range got.Done.Appended {
					if a.Line != i+1 || a.Seq != i {
						t.Fatalf("done.appended[%d] = %+v, want line %d seq %d", i, a, i+1, i)
					}
				}
				if !strings.Contains(said, fmt.Sprintf("%d line(s) are in for sure", len(got.Done.Appended))) {
					t.Errorf("done.appended holds %d lines, the error says otherwise", len(got.Done.Appended))
				}
			}
			// Room again: the --at named appends the rest, each line once.
			fsys.SetHook(nil)
			out.Reset()
			errb.Reset()
			zero := uint64(0)
			if err := (&SessionAppendCmd{ID: id, File: "-", JSONL: nonEmpty(path), At: &zero}).Run(e); err != nil {
				t.Fatalf("run again with --at 0: %v\n%s", err, errb.String())
			}
			r, err := e.openRook(false)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			sid, err := eventlog.ParseID(id)
			if err != nil {
				t.Fatal(err)
			}
			if sum, err := r.Log.Summary(sid); err != nil || sum.Events != 3000 {
				t.Errorf("after the run again with --at 0 the session holds %d events (%v), want the 3000 lines once each", sum.Events, err)
			}
		})
	}
}

// TestAppendJSONLAtRerunReadsTheLogInPages (review rwriters):
// The user resumes a stopped or failed 100,000-line `rook session append
// S --jsonl events.jsonl` the way README says ("give `--at SEQ` ... a run
// again with the same `--at` checks the lines already in ... skips them,
// and appends the rest"). Seen by hand: the append itself took 1.4 s; the
// run again with --at 0, all lines in already and nothing to append, took
// 15.6 s (25,000 lines: 2.5 s), holding the writer lock the whole time,
// so a hook that appended beside it (`echo hook | rook session append S
// --kind note`, default --lock-wait 10s) failed "store is locked by pid N
// (rook session append) (waited 10s for it)". README: writers wait so
// "that hooks an agent runs together all land". strace: two opens of the
// log and nine preads for every line checked.
// Now: checking the lines already in reads the session's events in
// order, in pages (as `session show` does), not opening and searching the
// log once a line: a rerun costs about what the append cost.
// It read r.Log.Read(id, seq, 1) for each line (sameEvent); heldEvents
// reads a page of events at a time.
func TestAppendJSONLAtRerunReadsTheLogInPages(t *testing.T) {
	const home = "/home/u/store"
	const n = 2000
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	clk := &clock.Fixed{T: time.Date(2026, 2, 10, 21, 0, 0, 0, time.UTC)}
	var out, errb bytes.Buffer
	env := func() *Env {
		out.Reset()
		errb.Reset()
		return &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w"}
	}
	if err := (&SessionNewCmd{Title: "resume"}).Run(env()); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out.String())
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, "{\"kind\":\"user\",\"body\":\"line %d\"}\n", i)
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (&SessionAppendCmd{ID: id, File: "-", JSONL: nonEmpty(path)}).Run(env()); err != nil {
		t.Fatal(err)
	}
	var opens atomic.Int64
	fsys.SetHook(func(op vfs.Op, p string) error {
		if (op == vfs.OpOpen || op == vfs.OpOpenRead) && strings.HasSuffix(p, ".log") {
			opens.Add(1)
		}
		return nil
	})
	zero := uint64(0)
	if err := (&SessionAppendCmd{ID: id, File: "-", JSONL: nonEmpty(path), At: &zero}).Run(env()); err != nil {
		t.Fatalf("rerun with --at 0: %v\n%s", err, errb.String())
	}
	t.Logf("rerun with --at 0 of %d lines all in already: %d opens of the event log", n, opens.Load())
	if opens.Load() > n/10 {
		t.Errorf("a --jsonl rerun with --at over %d lines already in opened the session's log %d times (once a line or more): the check costs many times the append, holding the writer lock", n, opens.Load())
	}
}

// TestAppendJSONLReadAheadBounded (review rjsonl): session append S
// --jsonl reads its lines in a goroutine (so that an idle input lets the
// writer lock go), each up to maxJSONLLine (64 MiB) and its own copy. It
// passed them through a channel of 64 lines: while the append was slower
// than the read (a body to compress, a body_file to read, the lock to
// take again after an idle input), the reader ran up to 64 lines ahead,
// all held in memory, where one line was before. A --jsonl input of 24
// lines of 48 MiB each (a session export with large tool results) took
// 2.5 GB of RSS where the commit before took 420 MB. Now the channel
// holds none: the reader reads one line ahead of the append.
//
// Here the first line's body_file is a FIFO no one writes yet, so the
// append waits on it (as on any slow body_file) while the input offers
// 4 MiB lines: how much of the input the run takes meanwhile is what it
// holds in memory.
func TestAppendJSONLReadAheadBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "body")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO:", err)
	}
	pr, pw := io.Pipe()
	var out2, errb syncBuffer
	e, id := pipedAppendEnv(t, "ahead", pr, &out2, &errb)
	ended := make(chan error, 1)
	go func() { ended <- (&SessionAppendCmd{ID: id, File: "-", JSONL: nonEmpty("-")}).Run(e) }()
	if _, err := fmt.Fprintf(pw, "{\"kind\":\"user\",\"body_file\":%q}\n", fifo); err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"kind":"user","body":"` + strings.Repeat("a", 4<<20) + "\"}\n")
	const lines = 80
	var taken atomic.Int64
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for range lines {
			if _, err := pw.Write(line); err != nil {
				return
			}
			taken.Add(int64(len(line)))
		}
	}()
	time.Sleep(3 * time.Second) // the run waits on the FIFO; its reader reads on
	ahead := taken.Load()

	// Let the run go on, and end it.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	<-wrote
	pw.Close()
	if err := <-ended; err != nil {
		t.Fatalf("append: %v (%s)", err, errb.String())
	}
	if n := strings.Count(out2.String(), "\n"); n != lines+1 {
		t.Errorf("%d seqs printed; want %d", n, lines+1)
	}
	if limit := int64(2*maxJSONLLine + len(line)); ahead > limit {
		t.Errorf("while its append waited, append --jsonl read %d MiB of its input ahead, held in memory (%d lines of 4 MiB); want at most %d MiB (two lines at the 64 MiB line limit)", ahead>>20, ahead/int64(len(line)), limit>>20)
	}
}

// pipedAppendEnv makes a store in memory holding one new session (titled
// title), and the Env of an append --jsonl into it that reads stdin and
// writes to out and errb (safe to read while the run goes on).
func pipedAppendEnv(t *testing.T, title string, stdin io.Reader, out, errb *syncBuffer) (*Env, string) {
	t.Helper()
	const home = "/home/u/store"
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	clk := &clock.Fixed{T: time.Date(2026, 2, 10, 21, 0, 0, 0, time.UTC)}
	var made syncBuffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &made, Stderr: errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w"}
	if err := (&SessionNewCmd{Title: title}).Run(e); err != nil {
		t.Fatal(err)
	}
	return &Env{Stdin: stdin, Stdout: out, Stderr: errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w"}, strings.TrimSpace(made.String())
}
