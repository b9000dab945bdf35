package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/eventlog"
)

// TestMcpCallHoldsNoLockWhileTheServerWorks: `rook mcp call` held the
// store's writer lock for the whole call, so while a slow server worked
// (up to --timeout, 60s by default) every other rook that writes (a
// capture from an agent's hook, an import, the inbox's drain) waited its
// --lock-wait and failed. Now the lock is taken only to record the call,
// once the server has answered, and the call is still recorded.
func TestMcpCallHoldsNoLockWhileTheServerWorks(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "slow", Sleep: 3 * time.Second}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)

	type ran struct {
		code     int
		out, err string
	}
	done := make(chan ran, 1)
	go func() {
		var out, errb bytes.Buffer
		code := r.main("", &out, &errb, "mcp", "call", "fake", "slow", `{"n":1}`)
		done <- ran{code, out.String(), errb.String()}
	}()
	// Once the server has the call, another rook writes at once.
	for deadline := time.Now().Add(20 * time.Second); !slices.Contains(fake.Methods(), "tools/call"); {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out, errb bytes.Buffer
	if code := r.main("", &out, &errb, "--lock-wait", "0", "session", "new", "--title", "meanwhile"); code != 0 {
		t.Errorf("a write while the server worked on the call: exit %d: %s", code, errb.String())
	}
	got := <-done
	if got.code != 0 || !strings.Contains(got.out, `slow called with {"n":1}`) {
		t.Fatalf("the call: exit %d, stdout %q, stderr %q", got.code, got.out, got.err)
	}

	// Recorded: the call and its result, in the server's session.
	ro, err := agent.Open(r.home, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, id, err := ro.MCPServer("fake")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ro.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []eventlog.Kind
	for _, ev := range evs {
		if ev.Label == "slow" {
			kinds = append(kinds, ev.Kind)
		}
	}
	if !slices.Equal(kinds, []eventlog.Kind{eventlog.KindToolCall, eventlog.KindToolResult}) {
		t.Fatalf("recorded %v, want the call and its result", kinds)
	}
}

// TestMcpSyncAndAddHoldNoLockWhileTheServerWorks: add and sync read the
// tool list (up to the connect timeout and the discovery timeout, 45s by
// default) holding the writer lock too. Now the list is read with no
// store open, and applied after.
func TestMcpSyncAndAddHoldNoLockWhileTheServerWorks(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	var slow atomic.Bool
	listing := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if slow.Load() && bytes.Contains(body, []byte(`"tools/list"`)) {
			listing <- struct{}{}
			time.Sleep(2 * time.Second)
		}
		fake.ServeHTTP(w, req)
	}))
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)
	slow.Store(true)

	for _, args := range [][]string{{"mcp", "sync", "fake"}, {"mcp", "add", "second", "--url", srv.URL}} {
		done := make(chan string, 1)
		go func() {
			var out, errb bytes.Buffer
			if code := r.main("", &out, &errb, args...); code != 0 {
				done <- fmt.Sprintf("exit %d: %s", code, errb.String())
				return
			}
			done <- out.String()
		}()
		select {
		case <-listing:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the tool list was never asked for", args)
		}
		var out, errb bytes.Buffer
		if code := r.main("", &out, &errb, "--lock-wait", "0", "session", "new"); code != 0 {
			t.Errorf("%s: a write while the server listed its tools: exit %d: %s", args, code, errb.String())
		}
		if got := <-done; !strings.Contains(got, " 1 tool(s), 1 on") {
			t.Fatalf("%s: %s", args, got)
		}
	}
	if out := r.ok("", "mcp", "ls"); !strings.Contains(out, "second ") || !strings.Contains(out, "fake ") {
		t.Fatalf("mcp ls: %s", out)
	}
}

// TestMcpCallNotRecordedSaysWhyTheCallFailed: when the call failed (the
// server could not be reached) and its record failed too (the store's
// writer lock held by another rook), the error said only "the call ...
// was made, but it could not be recorded": the call's own failure was
// lost, and a user read it as a call that ran and whose output was lost.
func TestMcpCallNotRecordedSaysWhyTheCallFailed(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)
	srv.Close() // unreachable from now on

	holder, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	defer func(w time.Duration) { recordLockWait = w }(recordLockWait)
	recordLockWait = 0 // the record fails at once: the lock is never freed
	var out, errb bytes.Buffer
	code := r.main("", &out, &errb, "--lock-wait", "0", "mcp", "call", "fake", "echo", `{}`)
	msg := errb.String()
	if code == 0 || !strings.Contains(msg, "could not be reached") || !strings.Contains(msg, "not recorded") && !strings.Contains(msg, "could not be recorded") {
		t.Fatalf("exit %d, stderr %q: want the call's failure and that it is not recorded", code, msg)
	}
	if strings.Contains(msg, "was made") {
		t.Fatalf("stderr %q: a call that never reached the server is said to have been made", msg)
	}
}

// TestMcpCallBadLockWaitRefusedBeforeTheCall: with $ROOK_LOCK_WAIT not a
// duration, a command that writes fails before it does anything. mcp
// call made the call first (with the store opened for reading, which
// reads no lock wait) and then failed to record it: the tool ran, and
// nothing of it was kept.
func TestMcpCallBadLockWaitRefusedBeforeTheCall(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)
	t.Setenv("ROOK_LOCK_WAIT", "soon")
	var out, errb bytes.Buffer
	code := r.main("", &out, &errb, "mcp", "call", "fake", "echo", `{}`)
	if code == 0 || !strings.Contains(errb.String(), "not a duration") {
		t.Fatalf("exit %d, stderr %q: want the lock wait refused", code, errb.String())
	}
	if slices.Contains(fake.Methods(), "tools/call") {
		t.Fatalf("the tool was called (%v), and the call could not be recorded: %s", fake.Methods(), errb.String())
	}
}

// TestMcpCallRecordWaitsForTheLock: the call is made with no store open;
// a writer holding the lock when it is to be recorded (a capture, an
// import) made a call run with --lock-wait 0 fail to be recorded, though
// the tool had run: before, such a call failed before it was made. A call
// made is now recorded once the lock is free, whatever --lock-wait says.
func TestMcpCallRecordWaitsForTheLock(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)

	holder, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for !slices.Contains(fake.Methods(), "tools/call") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		holder.Close()
	}()
	var out, errb bytes.Buffer
	if code := r.main("", &out, &errb, "--lock-wait", "0", "mcp", "call", "fake", "echo", `{"n":2}`); code != 0 {
		t.Fatalf("exit %d, stderr %q: a call made was not recorded", code, errb.String())
	}
	ro, err := agent.Open(r.home, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, id, err := ro.MCPServer("fake")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ro.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []eventlog.Kind
	for _, ev := range evs {
		if ev.Label == "echo" {
			kinds = append(kinds, ev.Kind)
		}
	}
	if !slices.Equal(kinds, []eventlog.Kind{eventlog.KindToolCall, eventlog.KindToolResult}) {
		t.Fatalf("recorded %v, want the call and its result", kinds)
	}
}

// TestMcpRepairNoteOnce: add, sync and call open the store for reading
// (to check the request, with no lock held while the server works), then
// for writing (to record it). A store whose open notes a repair (an index
// whose meta slot was torn) had the note printed by both opens: twice,
// the second with "rewrote it", as if two things had been repaired. It is
// printed once: the writer's, which says what the open did.
func TestMcpRepairNoteOnce(t *testing.T) {
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	for _, args := range [][]string{
		{"mcp", "sync", "fake"},
		{"mcp", "call", "fake", "echo", `{"n":1}`},
		{"mcp", "add", "second", "--url", srv.URL},
		{"mcp", "call", "fake", "nosuchtool", `{}`}, // refused, and the refusal recorded: the writer's note
	} {
		r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
		r.ok("", "init")
		r.ok("", "mcp", "add", "fake", "--url", srv.URL)
		// Tear the first meta slot of the index (its checksum fails): an
		// open uses the other, and a writer's rewrites it.
		f, err := os.OpenFile(filepath.Join(r.home, "index", "objects.idx"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("XXXXXXXX"), 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
		var out, errb bytes.Buffer
		r.main("", &out, &errb, args...)
		if n := strings.Count(errb.String(), "rook: note: index:"); n != 1 {
			t.Errorf("%s: the repair note printed %d time(s), want once: %q", args, n, errb.String())
		}
	}
}

// TestMcpCallNotRecordedSaysNotToRunItAgain: a call that ran, whose
// record found the writer lock held past its wait, failed with the lock's
// usual advice, "wait for it to finish and run the command again": run
// again, the tool runs again (a second message sent, a second file
// written). It says the call ran, its result is above, and that running
// the command again calls the tool again.
func TestMcpCallNotRecordedSaysNotToRunItAgain(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)
	holder, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	defer func(w time.Duration) { recordLockWait = w }(recordLockWait)
	recordLockWait = 0
	var out, errb bytes.Buffer
	code := r.main("", &out, &errb, "--lock-wait", "0", "mcp", "call", "fake", "echo", `{"n":3}`)
	msg := errb.String()
	if code != 1 || !strings.Contains(out.String(), `echo called with {"n":3}`) {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the result shown and exit 1", code, out.String(), msg)
	}
	if strings.Contains(msg, "run the command again") || !strings.Contains(msg, "calls the tool again") || !strings.Contains(msg, "result is above") {
		t.Fatalf("stderr %q: want the call said to have run, its result above, and that running it again calls the tool again", msg)
	}
}

// TestMcpCallNotRecordedOutputLost: a call that ran but could not be
// recorded (the writer lock held), its output lost too (a full disk): the
// error said its result was "above", where nothing arrived, and nothing
// kept it. It says the result was lost with the output.
func TestMcpCallNotRecordedOutputLost(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)

	holder, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	defer func(w time.Duration) { recordLockWait = w }(recordLockWait)
	recordLockWait = 0
	for _, json := range []bool{false, true} {
		args := []string{"--lock-wait", "0", "mcp", "call", "fake", "echo", `{}`}
		if json {
			args = append([]string{"--json"}, args...)
		}
		var errb bytes.Buffer
		code := r.main("", fullWriter{}, &errb, args...)
		msg := errb.String()
		if code == 0 || !strings.Contains(msg, "could not be recorded") {
			t.Fatalf("json %v: exit %d, stderr %q: want the record's failure", json, code, msg)
		}
		if strings.Contains(msg, "its result is above") || strings.Contains(msg, "its result is on standard output") {
			t.Fatalf("json %v: stderr %q: points at a result standard output lost", json, msg)
		}
		if !strings.Contains(msg, "lost with the output") {
			t.Fatalf("json %v: stderr %q: want the result said lost", json, msg)
		}
	}
}

// TestMcpCallFailedAfterTheServerHadItNotRecorded: a call the server had
// (it timed out before the tool answered) whose record then found the
// writer lock held past its wait failed with the lock's usual advice,
// "wait for it to finish and run the command again": run again, the
// tool, which may have run, is called again. It says the server had the
// call, and that running the command again may run the tool again; a call
// whose server was never reached keeps the lock's advice (the tool did
// not run).
func TestMcpCallFailedAfterTheServerHadItNotRecorded(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "slow", Sleep: 3 * time.Second}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)
	holder, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	defer func(w time.Duration) { recordLockWait = w }(recordLockWait)
	recordLockWait = 100 * time.Millisecond // waited for, then given up
	for _, json := range []bool{false, true} {
		args := []string{"--lock-wait", "0", "mcp", "call", "fake", "slow", `{}`, "--timeout", "1s"}
		if json {
			args = append([]string{"--json"}, args...)
		}
		var out, errb bytes.Buffer
		code := r.main("", &out, &errb, args...)
		msg := errb.String()
		if code != 1 || out.Len() != 0 || !strings.Contains(msg, "did not finish in time") || !strings.Contains(msg, "could not be recorded") {
			t.Fatalf("json %v: exit %d, stdout %q, stderr %q: want the call's failure and that it is not recorded", json, code, out.String(), msg)
		}
		if strings.Contains(msg, "run the command again") || !strings.Contains(msg, "the server had the call") || !strings.Contains(msg, "running the command again may run the tool again") || !strings.Contains(msg, "`rook doctor` shows the holder") {
			t.Fatalf("json %v: stderr %q: want no advice to run it again, and that running it again may run the tool again", json, msg)
		}
	}

	// Never reached: the tool did not run, and the lock's advice stands.
	srv.Close()
	var out, errb bytes.Buffer
	code := r.main("", &out, &errb, "--lock-wait", "0", "mcp", "call", "fake", "slow", `{}`, "--timeout", "1s")
	if msg := errb.String(); code != 1 || !strings.Contains(msg, "could not be reached") || !strings.Contains(msg, "run the command again") || strings.Contains(msg, "the server had the call") {
		t.Fatalf("unreached: exit %d, stderr %q", code, msg)
	}
}
