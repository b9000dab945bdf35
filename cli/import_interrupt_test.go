package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// Interrupted, an import said only "interrupt: stopped" and ended at once,
// as a crash would: the next command recovered the store "after a crash",
// and nothing said what was imported. Now the first interrupt stops it
// before the next file, the store closed as at any end: it says how many
// files are in and how many were not read, and that running it again
// imports those; it exits 130. The next import takes in only the rest,
// with no note of a crash.
func TestImportInterruptedSaysWhatIsIn(t *testing.T) {
	const home, dir = "/home/u/store", "/t"
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		paths = append(paths, p)
		line := fmt.Sprintf(`{"type":"user","sessionId":"s%d","cwd":"/w","message":{"role":"user","content":"hello %d"},"uuid":"u%d","timestamp":"2026-02-10T21:00:0%d.000Z"}`+"\n", i, i, i, i)
		if err := fsys.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(p, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The second file's read waits until the test has interrupted.
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && path == paths[1] {
			once.Do(func() { close(reached) })
			<-release
		}
		return nil
	})
	exit = func(int) { t.Error("rook ended at once") }
	t.Cleanup(func() { exit = os.Exit; fsys.SetHook(nil) })
	var out, errb syncBuffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clock.System, Cwd: "/"}
	ended := make(chan error)
	go func() { ended <- (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e) }()
	<-reached
	var said bytes.Buffer
	interrupted(os.Interrupt, &said, false) // a stopper is told: rook goes on
	close(release)
	err := <-ended
	var xe *exitError
	if !errors.As(err, &xe) || xe.code != 130 {
		t.Fatalf("ended with %v; want exit 130", err)
	}
	// The interrupt came before the second file was read: the first may
	// be in or not, as the reads ahead go.
	k := 0
	want := "interrupt: the import stopped before its first file: nothing imported; 5 not read (the first: /t/s0.jsonl): run the same `rook import` again to import them"
	if strings.Contains(xe.msg, "after 1 of 5") {
		k = 1
		want = "interrupt: the import stopped after 1 of 5 file(s): 1 taken in, 0 unchanged, all in the store; 4 not read (the first: /t/s1.jsonl): run the same `rook import` again to import them (what is in is not imported twice)"
	}
	if xe.msg != want {
		t.Errorf("said %q\nwant %q", xe.msg, want)
	}
	if !strings.Contains(errb.String(), "rook: interrupt: stopping the import once the file being taken in is in (interrupt again stops at once)") {
		t.Errorf("stderr: %q", errb.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("stopped by an interrupt: %d more file(s) found were not read: the same import again takes them in", 5-k)) || strings.Contains(out.String(), "no transcript found") {
		t.Errorf("stdout: %q", out.String())
	}
	fsys.SetHook(nil)
	var out2, errb2 syncBuffer
	e2 := &Env{Stdout: &out2, Stderr: &errb2, FS: fsys, Home: home, Clock: clock.System, Cwd: "/"}
	if err := (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out2.String(), fmt.Sprintf("claude-code: 5 file(s): %d new, 0 grown, %d unchanged,", 5-k, k)) || strings.Contains(errb2.String(), "crash") {
		t.Errorf("run again: %s%s", out2.String(), errb2.String())
	}
}

// A second interrupt, while an import stops itself, ends rook at once;
// it said only "interrupt: stopped". Now it says what is true then: the
// import ended in the middle of a file, what is in the store is whole, and
// the next import takes the file up.
func TestImportInterruptedTwiceSaysWhatIsTrue(t *testing.T) {
	fsys, home, dir, path := oneTranscript(t)
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpOpenRead && p == path {
			once.Do(func() { close(reached) })
			<-release
		}
		return nil
	})
	codes := make(chan int, 2)
	exit = func(code int) { codes <- code }
	t.Cleanup(func() { exit = os.Exit; fsys.SetHook(nil) })
	for _, asJSON := range []bool{false, true} {
		var out, errb syncBuffer
		e := &Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clock.System, Cwd: "/", JSON: asJSON}
		ended := make(chan error)
		go func() { ended <- (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e) }()
		<-reached
		var said bytes.Buffer
		interrupted(os.Interrupt, &said, asJSON) // the import stops itself
		interrupted(os.Interrupt, &said, asJSON) // rook ends at once
		if code := <-codes; code != 130 {
			t.Errorf("json %v: exit %d; want 130", asJSON, code)
		}
		want := "interrupt again: the import ended at once, in the middle of a file: what is in the store is whole (the next command that opens it takes in what was written whole and sets aside any part written, and a note says so); the next `rook import` takes that file up from what is in, and the files not read yet"
		if asJSON {
			if !strings.Contains(said.String(), `{"error":"`+want+`","exit_code":130}`) {
				t.Errorf("--json: said %q", said.String())
			}
		} else if said.String() != "rook: "+want+"\n" {
			t.Errorf("said %q\nwant %q", said.String(), "rook: "+want+"\n")
		}
		close(release)
		<-ended
		reached, release, once = make(chan struct{}), make(chan struct{}), sync.Once{}
		interrupts.mu.Lock()
		interrupts.asked = false
		interrupts.mu.Unlock()
	}
}

// An interrupt while the import's own open holds the writer lock (the
// open may be recovering what a crash left: cutting a torn tail,
// rebuilding the index) ended rook at once, as if it were still waiting
// for another writer's lock, saying "nothing is written yet". Only a wait
// for another's lock ends at once; this one stops itself before its first
// file, the store opened and closed as at any end.
func TestImportInterruptedWhileOpeningStopsItself(t *testing.T) {
	fsys, home, dir, _ := oneTranscript(t)
	// The open, once it holds the lock, waits at the index until the
	// test has interrupted.
	reached, release := make(chan struct{}), make(chan struct{})
	var locked atomic.Bool
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, p string) error {
		switch {
		case op == vfs.OpLock && p == filepath.Join(home, cas.LockFile):
			locked.Store(true)
		case locked.Load() && strings.HasPrefix(p, filepath.Join(home, cas.IndexDir)):
			once.Do(func() { close(reached); <-release })
		}
		return nil
	})
	exit = func(int) { t.Error("rook ended at once") }
	t.Cleanup(func() { exit = os.Exit; fsys.SetHook(nil) })
	var out, errb syncBuffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clock.System, Cwd: "/"}
	ended := make(chan error)
	go func() { ended <- (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e) }()
	<-reached
	var said bytes.Buffer
	interrupted(os.Interrupt, &said, false) // the import stops itself
	close(release)
	err := <-ended
	var xe *exitError
	if !errors.As(err, &xe) || xe.code != 130 || !strings.HasPrefix(xe.msg, "interrupt: the import stopped before its first file: nothing imported; 1 not read") {
		t.Fatalf("ended with %v; want exit 130, stopped before its first file (said %q)", err, said.String())
	}
	if !strings.Contains(errb.String(), "rook: interrupt: stopping the import once the store is open, before its first file (interrupt again stops at once)") {
		t.Errorf("stderr: %q", errb.String())
	}
}

// Waiting for a lock whose holder does not say who it is (its lock file
// empty), an interrupt still ends rook at once: only this import's own
// open, the lock file naming this process, stops itself instead.
func TestImportInterruptedWaitingForAnUnnamedHolderEndsAtOnce(t *testing.T) {
	fsys, home, dir, _ := oneTranscript(t)
	lockPath := filepath.Join(home, cas.LockFile)
	if err := fsys.WriteFileAtomic(lockPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := fsys.TryLock(lockPath, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	var tries atomic.Int32
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpLock && p == lockPath && tries.Add(1) == 2 {
			close(reached) // the import is polling for the lock
		}
		return nil
	})
	codes := make(chan int, 1)
	exit = func(code int) { codes <- code }
	t.Cleanup(func() { exit = os.Exit; fsys.SetHook(nil) })
	var out, errb syncBuffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clock.System, Cwd: "/", LockWait: time.Minute}
	ended := make(chan error)
	go func() { ended <- (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e) }()
	<-reached
	var said bytes.Buffer
	interrupted(os.Interrupt, &said, false)
	held.Unlock() // (rook has ended: let the test's import finish)
	select {
	case code := <-codes:
		if code != 130 {
			t.Errorf("exit %d; want 130", code)
		}
	default:
		t.Errorf("rook did not end at once (said %q)", said.String())
	}
	if want := "rook: interrupt: the import stopped before it began, as the store was being opened: nothing was imported; run it again to import\n"; said.String() != want {
		t.Errorf("said %q\nwant %q", said.String(), want)
	}
	<-ended
	interrupts.mu.Lock()
	interrupts.asked = false
	interrupts.mu.Unlock()
}

// An interrupt as the import closes the store, every file gone through,
// said it would stop "once the file being taken in is in", though no file
// was being taken in; the import went on to close, as it should. It now
// says the import is closing the store and ends once that is done, with
// 130, as any import an interrupt reached does.
func TestImportInterruptedWhileClosingSaysSo(t *testing.T) {
	fsys, home, dir, _ := oneTranscript(t)
	// The event log's close takes away its writer marker: the import has
	// returned, and the store is closing.
	var said bytes.Buffer
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpRemove && filepath.Base(p) == "WRITER-ACTIVE" {
			once.Do(func() { interrupted(os.Interrupt, &said, false) })
		}
		return nil
	})
	exit = func(int) { t.Error("rook ended at once") }
	t.Cleanup(func() { exit = os.Exit; fsys.SetHook(nil) })
	var out, errb syncBuffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clock.System, Cwd: "/"}
	// The import is whole; it ends as interrupted all the same (130), so
	// that what ran it stops too.
	err := (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e)
	var xe *exitError
	if !errors.As(err, &xe) || xe.code != 130 || xe.msg != "interrupt: the import had read every file when it came to stop: nothing is left for it to import" {
		t.Fatalf("ended with %v; want the import whole, exit 130, saying so", err)
	}
	want := "\nrook: interrupt: the import has gone through its files and is closing the store; it ends once that is done (interrupt again stops at once)\n"
	if got := errb.String(); !strings.Contains(got, want) {
		t.Errorf("stderr %q\nwant it to hold %q", got, want)
	}
	if !strings.Contains(out.String(), "1 new") {
		t.Errorf("stdout %q: want the summary of the file imported", out.String())
	}
	interrupts.mu.Lock()
	interrupts.asked = false
	interrupts.mu.Unlock()
}

// oneTranscript is a store at home, in a memory filesystem, and a
// directory dir holding one Claude Code transcript of one line, path.
func oneTranscript(t *testing.T) (fsys *vfs.MemFS, home, dir, path string) {
	t.Helper()
	home, dir = "/home/u/store", "/t"
	fsys = vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "s.jsonl")
	line := `{"type":"user","sessionId":"s","cwd":"/w","message":{"role":"user","content":"hello"},"uuid":"u1","timestamp":"2026-02-10T21:00:00.000Z"}` + "\n"
	if err := fsys.WriteFileAtomic(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return fsys, home, dir, path
}

// An interrupt while the import takes in its last file stops nothing:
// the file is in, and no file is left. It still ends as interrupted (130,
// saying all is in), where it ended 0 as if never interrupted: a shell
// looping over imports went on to the next one after the Ctrl-C.
func TestImportInterruptedAtItsLastFileEndsInterrupted(t *testing.T) {
	const home, dir = "/home/u/store", "/t"
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s0.jsonl")
	line := `{"type":"user","sessionId":"s0","cwd":"/w","message":{"role":"user","content":"hello"},"uuid":"u0","timestamp":"2026-02-10T21:00:00.000Z"}` + "\n"
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	// The interrupt comes as the file's session is written: it is being
	// taken in.
	var said bytes.Buffer
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.HasSuffix(path, ".log") {
			once.Do(func() { interrupted(os.Interrupt, &said, false) })
		}
		return nil
	})
	exit = func(int) { t.Error("rook ended at once") }
	t.Cleanup(func() {
		exit = os.Exit
		fsys.SetHook(nil)
		interrupts.mu.Lock()
		interrupts.asked = false
		interrupts.mu.Unlock()
	})
	var out, errb syncBuffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clock.System, Cwd: "/"}
	err := (&ImportClaudeCodeCmd{importPaths{Paths: []string{dir}}}).Run(e)
	var xe *exitError
	if !errors.As(err, &xe) || xe.code != 130 {
		t.Fatalf("ended with %v; want exit 130", err)
	}
	if want := "interrupt: the import had read every file when it came to stop: nothing is left for it to import"; xe.msg != want {
		t.Errorf("said %q\nwant %q", xe.msg, want)
	}
	if !strings.Contains(out.String(), "claude-code: 1 file(s): 1 new,") {
		t.Errorf("stdout: %q", out.String())
	}
}
