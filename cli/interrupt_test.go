package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Interrupted, rook runs the cleanups of what it is writing (but not those
// done already), says it stopped, and exits as a shell reports a process
// the signal killed.
func TestInterrupted(t *testing.T) {
	var code int
	exit = func(c int) { code = c }
	t.Cleanup(func() { exit = os.Exit })
	for _, tc := range []struct {
		sig  os.Signal
		json bool
		code int
		says string
	}{
		{os.Interrupt, false, 130, "rook: interrupt: stopped\n"},
		{syscall.SIGTERM, false, 143, "rook: terminated: stopped\n"},
		// Under --json the last line is the JSON error, as any failure's.
		{os.Interrupt, true, 130, `{"error":"interrupt: stopped","exit_code":130}` + "\n"},
		{syscall.SIGTERM, true, 143, `{"error":"terminated: stopped","exit_code":143}` + "\n"},
	} {
		ran, finished := 0, 0
		doneA := onInterrupt(func() { ran++ })
		doneB := onInterrupt(func() { finished++ })
		doneB() // finished before the signal
		var stderr bytes.Buffer
		interrupted(tc.sig, &stderr, tc.json)
		doneA()
		if ran != 1 || finished != 0 || code != tc.code || stderr.String() != tc.says {
			t.Fatalf("%v: cleanups run %d and %d, exit %d, said %q", tc.sig, ran, finished, code, stderr.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in turn.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An append --jsonl interrupted part way says how many lines are in for
// sure, and the --at that runs it again: a Ctrl-C ends rook at once, and
// running the same input again appended the lines already in twice.
func TestAppendJSONLInterruptedSaysWhatIsIn(t *testing.T) {
	// The first barrier (256 events) makes lines 1-256 durable; 257-300
	// wait for the next, and the input goes on.
	stderr, pw, ended := appendJSONLAtBarrier(t, `{"kind":"user","body":"first"}`, nil)
	exit = func(int) {}
	t.Cleanup(func() { exit = os.Exit })
	var said bytes.Buffer
	interrupted(os.Interrupt, &said, false)
	want := "rook: append --jsonl stopped: 256 line(s) are in for sure (through line 256, #1 on); lines after may be too: run it again with --at 1 to append the rest, each once\n"
	if stderr.String() != want {
		t.Fatalf("interrupted, said %q; want %q", stderr.String(), want)
	}
	pw.Close()
	if code := <-ended; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// An append --jsonl stopped part way names the bad lines it had read, as
// its end would have: the stop said only how many lines were in, and a
// bad line skipped before it went unreported.
func TestAppendJSONLInterruptedReportsBadLines(t *testing.T) {
	stderr, pw, ended := appendJSONLAtBarrier(t, "", []string{`{"kind":"user","body":"first"}`, `{"kind":"bogus"}`})
	exit = func(int) {}
	t.Cleanup(func() { exit = os.Exit })
	var said bytes.Buffer
	interrupted(syscall.SIGTERM, &said, false)
	want := "rook: line 2: unknown event kind \"bogus\": use one of user, assistant, reasoning, tool-call, tool-result, skill, checkpoint, compaction, error, note\n" +
		"rook: append --jsonl stopped: 256 line(s) are in for sure (through line 257, #0 on); lines after may be too: run it again with --at 0 to append the rest, each once\n"
	if stderr.String() != want {
		t.Fatalf("stopped, said %q; want %q", stderr.String(), want)
	}
	pw.Close()
	<-ended
}

// An append --jsonl stopped part way under --json says in its JSON error
// what the text stop says, as a run the store failed part way does
// (jsonlFailed): resume_at, the --at that runs it again, and done, the
// lines in for sure. The JSON error was only {"error":"interrupt:
// stopped","exit_code":130} (the report is printed only at the end): a
// script could not tell which lines were in or how to resume.
func TestAppendJSONLInterruptedJSONNamesTheAt(t *testing.T) {
	pr, pw := io.Pipe()
	var out2, errb syncBuffer
	e, id := pipedAppendEnv(t, "stop", pr, &out2, &errb)
	e.JSON = true
	codes := make(chan int, 1)
	exit = func(code int) { codes <- code }
	t.Cleanup(func() { exit = os.Exit })
	ended := make(chan error, 1)
	go func() { ended <- (&SessionAppendCmd{ID: id, File: "-", JSONL: nonEmpty("-")}).Run(e) }()
	var lines strings.Builder
	for i := range 600 {
		fmt.Fprintf(&lines, "{\"kind\":\"user\",\"body\":\"line %d\"}\n", i)
	}
	if _, err := pw.Write([]byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the lines read are appended, 512 durable
	var said bytes.Buffer
	interrupted(os.Interrupt, &said, true)
	if code := <-codes; code != 130 {
		t.Errorf("exit %d; want 130", code)
	}
	pw.Close()
	<-ended
	if errb.String() != "" {
		t.Errorf("under --json the stop said on stderr, beside its JSON error: %q", errb.String())
	}
	// The JSON error: its last line.
	last := strings.TrimSpace(said.String())
	if i := strings.LastIndex(last, "\n"); i >= 0 {
		last = last[i+1:]
	}
	var got struct {
		Error    string  `json:"error"`
		ExitCode int     `json:"exit_code"`
		ResumeAt *uint64 `json:"resume_at"`
		Done     *struct {
			Appended []struct{ Line, Seq int } `json:"appended"`
			Errors   []struct{ Line int }      `json:"errors"`
		} `json:"done"`
	}
	if err := json.Unmarshal([]byte(last), &got); err != nil {
		t.Fatalf("the JSON error %q does not decode: %v", last, err)
	}
	if got.ResumeAt == nil || *got.ResumeAt != 0 || got.Done == nil || got.Done.Errors == nil || got.ExitCode != 130 {
		t.Fatalf("--json stop of append --jsonl: JSON error %s has no resume_at 0 and done report of the lines in for sure, which the text stop names", last)
	}
	// The lines in for sure (512 by two barriers, the first at least), as
	// the message says.
	n := len(got.Done.Appended)
	if n < 256 || got.Done.Appended[n-1].Line != n || got.Done.Appended[n-1].Seq != n-1 ||
		!strings.Contains(got.Error, fmt.Sprintf("%d line(s) are in for sure (through line %d, #0 on)", n, n)) || !strings.Contains(got.Error, "--at 0") {
		t.Errorf("the JSON error's message and done disagree, or miss the lines in: %.300s", last)
	}
}

// appendJSONLAtBarrier starts `rook session append --jsonl -` on a new
// session (holding one event first, if before is a body), feeds it the
// lines given and then 300 good ones, and returns once the first barrier
// (256 events) has printed its seqs: the input stays open.
func appendJSONLAtBarrier(t *testing.T, before string, lines []string) (*syncBuffer, *io.PipeWriter, chan int) {
	t.Helper()
	// The input stays open: idle, or waited on after the lock was held
	// a while, the run would make every line durable and let the lock
	// go, where the stop is to find only the barrier's.
	idle, hold := jsonlIdle, jsonlHold
	jsonlIdle, jsonlHold = time.Hour, time.Hour
	t.Cleanup(func() { jsonlIdle, jsonlHold = idle, hold }) // (the run has ended: the tests wait for it)
	home, ws := t.TempDir(), t.TempDir()
	var out, errb bytes.Buffer
	if Main([]string{"--home", home, "-C", ws, "init"}, strings.NewReader(""), &out, &errb) != 0 {
		t.Fatal(errb.String())
	}
	out.Reset()
	if Main([]string{"--home", home, "-C", ws, "session", "new"}, strings.NewReader(""), &out, &errb) != 0 {
		t.Fatal(errb.String())
	}
	id := strings.TrimSpace(out.String())
	if before != "" {
		if Main([]string{"--home", home, "-C", ws, "session", "append", id, "--jsonl", "-"}, strings.NewReader(before+"\n"), &out, &errb) != 0 {
			t.Fatal(errb.String())
		}
	}
	pr, pw := io.Pipe()
	var stdout, stderr syncBuffer
	ended := make(chan int)
	go func() {
		ended <- Main([]string{"--home", home, "-C", ws, "session", "append", id, "--jsonl", "-"}, pr, &stdout, &stderr)
	}()
	for _, l := range lines {
		fmt.Fprintln(pw, l)
	}
	for i := 0; i < 300; i++ {
		fmt.Fprintf(pw, `{"kind":"user","body":"line %d"}`+"\n", i)
	}
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(stdout.String(), "\n") < 256 {
		if time.Now().After(deadline) {
			t.Fatalf("seqs not printed at the barrier: %q", stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &stderr, pw, ended
}
