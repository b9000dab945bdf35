// Package scripts runs the testscript scripts in testdata/: each one drives
// the real `rook` command (this test binary, re-executed) against a store in
// its own temporary directory.
package scripts

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/cli"
	"github.com/rookhq/rook/eventlog"
)

func TestMain(m *testing.M) {
	// testscript sets os.Args[0] to the command's name before it runs the
	// command: put back the name rook was run by, as a real rook sees it
	// (`rook mcp install` points a client at that path, links kept).
	arg0 := os.Args[0]
	testscript.Main(m, map[string]func(){
		"rook": func() {
			os.Args[0] = arg0
			os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("ROOK_HOME", filepath.Join(env.WorkDir, "store"))
			// Times are shown in the local zone: the scripts pin it (a
			// script that tests another sets TZ itself).
			env.Setenv("TZ", "UTC")
			env.Values[fakesKey{}] = &fakeServers{m: map[string]*fakeServer{}}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"flipbyte":  flipByte,
			"truncate":  truncateFile,
			"age":       ageFile,
			"holdlock":  holdLock,
			"dropindex": dropIndex,
			"writefile": writeFile,
			"exitcode":  exitCode,
			// for the session scripts
			"setenvfromstdout": setEnvFromStdout,
			"repeatfile":       repeatFile,
			"crashfork":        crashFork,
			// for the capture, diff, rewind and checkpoint scripts
			"checkmode": checkMode,
			"checkdir":  checkDir,
			"checklink": checkLink,
			// for the mcp_client scripts
			"mcpfake":        mcpFake,
			"mcpfake-tools":  mcpFakeTools,
			"mcpfake-config": mcpFakeConfig,
			"mcpfake-status": mcpFakeStatus,
			"mcpfake-stop":   mcpFakeStop,
			"deadurl":        deadURL,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				// Root writes where permissions say no one may (chmod 0555):
				// a script that tests a refused write skips under it.
				return os.Geteuid() == 0, nil
			}
			if cond == "tzdata" {
				// The system's time zone data, for a script that sets TZ.
				_, err := time.LoadLocation("Asia/Tokyo")
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") != "",
	})
}

// flipbyte FILE OFFSET: invert every bit of one byte. A negative offset
// counts from the end of the file.
func flipByte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(b)
	}
	if off < 0 || off >= len(b) {
		ts.Fatalf("offset %d outside %s (%d bytes)", off, path, len(b))
	}
	b[off] ^= 0xff
	ts.Check(os.WriteFile(path, b, 0o600))
}

// truncate FILE SIZE: cut a file, as a crash mid-write would.
func truncateFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: truncate FILE SIZE")
	}
	size, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	path := ts.MkAbs(args[0])
	if size < 0 {
		st, err := os.Stat(path)
		ts.Check(err)
		size += st.Size()
	}
	ts.Check(os.Truncate(path, size))
}

// age AGO FILE...: set each file's modification time back by the duration
// AGO. An hour: its writer stopped long ago, and import takes in a last
// line cut short. A negative one (a time to come) stands for a file
// written moments ago however slow the machine: import leaves such a line
// for the next import.
func ageFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: age AGO FILE...")
	}
	ago, err := time.ParseDuration(args[0])
	ts.Check(err)
	at := time.Now().Add(-ago)
	for _, a := range args[1:] {
		ts.Check(os.Chtimes(ts.MkAbs(a), at, at))
	}
}

// holdlock [-silent] HOME [FOR]: take the store's writer lock from the
// test process, as a running writer would, until the script ends, or for
// the duration FOR (a writer that finishes while another waits). It names
// itself in the lock file as "rook session append" would; with -silent it
// writes nothing there, as a program other than rook taking the lock.
func holdLock(ts *testscript.TestScript, neg bool, args []string) {
	silent := len(args) > 0 && args[0] == "-silent"
	if silent {
		args = args[1:]
	}
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: holdlock [-silent] HOME [FOR]")
	}
	f, err := os.OpenFile(filepath.Join(ts.MkAbs(args[0]), "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	ts.Check(err)
	ts.Check(unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	if !silent {
		ts.Check(f.Truncate(0))
		_, err = fmt.Fprintf(f, "pid %d (rook session append)\n", os.Getpid())
		ts.Check(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { f.Close() }) }
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		time.AfterFunc(d, release)
	}
	ts.Defer(release)
}

// dropindex HOME: delete the index, as a lost or hand-deleted file.
func dropIndex(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dropindex HOME")
	}
	ts.Check(os.Remove(filepath.Join(ts.MkAbs(args[0]), "index", "objects.idx")))
}

// writefile FILE HEX: write bytes given in hex (for inputs txtar cannot hold).
func writeFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: writefile FILE HEX")
	}
	b, err := hex.DecodeString(args[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o600))
}

// exitcode N COMMAND [ARGS...]: run COMMAND as exec does (same environment,
// directory and stdin) and check that it exits with status N. Its stdout
// and stderr are kept for the stdout and stderr commands that follow.
func exitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	var ee *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case err == nil:
	case errors.As(err, &ee):
		got = ee.ExitCode()
	default:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// setenvfromstdout NAME [REGEXP]: set NAME to the last command's stdout,
// trimmed, or to the first group of REGEXP's first match in it (session ids
// are random: this is how a script keeps one).
func setEnvFromStdout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: setenvfromstdout NAME [REGEXP]")
	}
	out := ts.ReadFile("stdout")
	val := strings.TrimSpace(out)
	if len(args) == 2 {
		m := regexp.MustCompile(args[1]).FindStringSubmatch(out)
		if len(m) < 2 {
			ts.Fatalf("no match for %q (with a group) in stdout", args[1])
		}
		val = m[1]
	}
	ts.Setenv(args[0], val)
}

// repeatfile [-a] FILE N TEXT: write TEXT (with \n for a newline) N times
// to FILE; -a appends. For inputs too large to spell out.
func repeatFile(ts *testscript.TestScript, neg bool, args []string) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if len(args) > 0 && args[0] == "-a" {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		args = args[1:]
	}
	if neg || len(args) != 3 {
		ts.Fatalf("usage: repeatfile [-a] FILE N TEXT")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), flags, 0o600)
	ts.Check(err)
	_, err = f.WriteString(strings.Repeat(strings.ReplaceAll(args[2], `\n`, "\n"), n))
	ts.Check(err)
	ts.Check(f.Close())
}

// checkmode FILE PERM: FILE (not followed if a link) has exactly the
// permission bits PERM, in octal (0644, 0755).
func checkMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: checkmode FILE PERM")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Lstat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode(); !got.IsRegular() || uint64(got.Perm()) != want {
		ts.Fatalf("%s has mode %v (%04o), want a regular file with %04o", args[0], got, got.Perm(), want)
	}
}

// checkdir DIR PERM: DIR is a directory (not a link to one) with PERM.
func checkDir(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: checkdir DIR PERM")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Lstat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode(); !got.IsDir() || uint64(got.Perm()) != want {
		ts.Fatalf("%s has mode %v (%04o), want a directory with %04o", args[0], got, got.Perm(), want)
	}
}

// checklink NAME TARGET: NAME is a symbolic link whose target is TARGET.
func checkLink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: checklink NAME TARGET")
	}
	got, err := os.Readlink(ts.MkAbs(args[0]))
	ts.Check(err)
	if got != args[1] {
		ts.Fatalf("%s leads to %q, want %q", args[0], got, args[1])
	}
}

// The MCP servers of the mcp_client scripts: mcpclient's fake, over HTTP,
// in the test process. Each script has its own, by name.

type fakesKey struct{}

type fakeServers struct {
	mu sync.Mutex
	m  map[string]*fakeServer
}

// fakeServer serves the current fake; mcpfake-config replaces it and
// mcpfake-status makes every answer an HTTP error, at the same URL.
type fakeServer struct {
	srv *httptest.Server

	mu        sync.Mutex
	fake      *mcpclient.Fake
	tools     []mcpclient.FakeTool // the tools last given
	status    int                  // when not 0, every request gets this status
	challenge string               // and this WWW-Authenticate, if any
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fake, status, challenge := s.fake, s.status, s.challenge
	s.mu.Unlock()
	if fake == nil {
		http.Error(w, "stopped", http.StatusServiceUnavailable)
		return
	}
	if status != 0 {
		if challenge != "" {
			w.Header().Set("WWW-Authenticate", challenge)
		}
		http.Error(w, "told to answer "+strconv.Itoa(status), status)
		return
	}
	fake.ServeHTTP(w, r)
}

func (s *fakeServer) swap(f *mcpclient.Fake) {
	s.mu.Lock()
	old := s.fake
	s.fake = f
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

func fakeByName(ts *testscript.TestScript, name string) *fakeServer {
	fs := ts.Value(fakesKey{}).(*fakeServers)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := fs.m[name]
	if s == nil {
		ts.Fatalf("no fake MCP server %s: start it with mcpfake", name)
	}
	return s
}

// readFakeTools reads a JSON array of mcpclient.FakeTool.
func readFakeTools(ts *testscript.TestScript, file string) []mcpclient.FakeTool {
	var tools []mcpclient.FakeTool
	if err := json.Unmarshal([]byte(ts.ReadFile(file)), &tools); err != nil {
		ts.Fatalf("%s: %v", file, err)
	}
	return tools
}

// mcpfake NAME TOOLSFILE: start a fake MCP server (streamable HTTP) in the
// test process offering the tools in TOOLSFILE (a JSON array of
// mcpclient.FakeTool), set NAME to its endpoint's URL, and stop it when the
// script ends.
func mcpFake(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mcpfake NAME TOOLSFILE")
	}
	fs := ts.Value(fakesKey{}).(*fakeServers)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m[args[0]] != nil {
		ts.Fatalf("fake MCP server %s is already running", args[0])
	}
	tools := readFakeTools(ts, args[1])
	s := &fakeServer{fake: mcpclient.NewFake(mcpclient.FakeConfig{Tools: tools}), tools: tools}
	s.srv = httptest.NewServer(s)
	fs.m[args[0]] = s
	ts.Defer(func() { mcpFakeStop(ts, false, args[:1]) })
	ts.Setenv(args[0], s.srv.URL+"/mcp")
}

// mcpfake-tools NAME TOOLSFILE: the fake offers these tools from now on.
func mcpFakeTools(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mcpfake-tools NAME TOOLSFILE")
	}
	s := fakeByName(ts, args[0])
	tools := readFakeTools(ts, args[1])
	s.mu.Lock()
	s.tools = tools
	s.fake.SetTools(tools)
	s.mu.Unlock()
}

// mcpfake-config NAME CONFIGFILE: replace the fake, at the same URL, by
// one doing CONFIGFILE (a JSON mcpclient.FakeConfig: Token, Challenge,
// ProtectedResource, Silent...). Without Tools in it, the tools stay.
func mcpFakeConfig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mcpfake-config NAME CONFIGFILE")
	}
	s := fakeByName(ts, args[0])
	var cfg mcpclient.FakeConfig
	if err := json.Unmarshal([]byte(ts.ReadFile(args[1])), &cfg); err != nil {
		ts.Fatalf("%s: %v", args[1], err)
	}
	if cfg.Tools == nil && cfg.ToolsFile == "" {
		s.mu.Lock()
		cfg.Tools = s.tools
		s.mu.Unlock()
	}
	if cfg.ToolsFile != "" {
		cfg.ToolsFile = ts.MkAbs(cfg.ToolsFile)
	}
	s.swap(mcpclient.NewFake(cfg))
}

// mcpfake-status NAME CODE [WWW-AUTHENTICATE]: the fake answers every
// request with HTTP status CODE (and that challenge); 0 makes it answer
// again.
func mcpFakeStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: mcpfake-status NAME CODE [WWW-AUTHENTICATE]")
	}
	s := fakeByName(ts, args[0])
	code, err := strconv.Atoi(args[1])
	ts.Check(err)
	s.mu.Lock()
	s.status, s.challenge = code, ""
	if len(args) == 3 {
		s.challenge = args[2]
	}
	s.mu.Unlock()
}

// mcpfake-stop NAME: stop the fake: its URL refuses connections from now
// on, as a server that went away.
func mcpFakeStop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpfake-stop NAME")
	}
	s := fakeByName(ts, args[0])
	s.swap(nil)
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// deadurl NAME: set NAME to an HTTP URL where nothing listens: connections
// to it are refused until the script ends.
func deadURL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: deadurl NAME")
	}
	addr, release, err := refusingAddr()
	ts.Check(err)
	ts.Defer(func() { release() })
	ts.Setenv(args[0], "http://"+addr+"/mcp")
}

// refusingAddr is a loopback address where connections are refused: a
// socket bound to its port and never listening holds the port (without
// SO_REUSEADDR, so no other socket may bind it) until release. The port
// of a listener just closed was free again: a fake that a script running
// beside started could get it and answer (14 times in 20,000).
func refusingAddr() (addr string, release func() error, err error) {
	// Close-on-exec under ForkLock, as the net package does: rook, run by
	// a script meanwhile, is not to hold the port too.
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return "", nil, fmt.Errorf("deadurl: socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return "", nil, fmt.Errorf("deadurl: bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	in4, ok := sa.(*unix.SockaddrInet4)
	if err != nil || !ok {
		unix.Close(fd)
		return "", nil, fmt.Errorf("deadurl: getsockname: %v %T", err, sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), func() error { return unix.Close(fd) }, nil
}

// TestDeadURLRefuses: deadurl's address refuses connections, and no other
// socket can take its port while the script runs. It gave the port of a
// listener just closed, which a fake started beside could get and answer.
func TestDeadURLRefuses(t *testing.T) {
	addr, release, err := refusingAddr()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("another listener got %s", addr)
	}
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
}

// crashfork HOME PARENT AT TITLE: fork session PARENT at AT in HOME's event
// logs, as `rook session fork` does, and print the fork's id, leaving
// the writer as a kill after the fork does: not closed, its
// WRITER-ACTIVE in place. No lock is taken: nothing else writes while a
// script runs its commands one at a time.
func crashFork(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: crashfork HOME PARENT AT TITLE")
	}
	l, err := eventlog.Open(filepath.Join(ts.MkAbs(args[0]), "events"), eventlog.Options{Writable: true})
	ts.Check(err)
	parent, err := eventlog.ParseID(args[1])
	ts.Check(err)
	at, err := strconv.ParseUint(args[2], 10, 64)
	ts.Check(err)
	m, err := l.Fork(parent, at, eventlog.Meta{Title: args[3]})
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), m.ID)
}
