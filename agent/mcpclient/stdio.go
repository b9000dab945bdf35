package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stdioGrace is how long Close waits for the program after closing its
// stdin, and again after SIGTERM, before SIGKILL.
var stdioGrace = 2 * time.Second

// stdioTransport speaks to a program over its stdin and stdout, one JSON
// message a line each way. Its stderr goes to Options.Stderr, and the tail
// of it into messages when the program dies.
type stdioTransport struct {
	cmd    *exec.Cmd
	in     *os.File // the program's stdin, our end
	handle func(*message) *message
	maxMsg int64
	tail   *tailWriter

	wmu sync.Mutex // one line at a time on in

	mu      sync.Mutex
	pending map[string]*waiter
	// lines counts the lines whose write began (the program may have
	// them whole, or part): requests,
	// notifications and replies to its requests (take).
	lines   uint64
	done    chan struct{} // closed when the reader stops; err says why
	err     error
	exited  chan struct{} // closed when the program has been waited for
	waitErr error
	// junk is the first line the program wrote on stdout that is not
	// JSON-RPC, cleaned: a handshake that never completes says it.
	junk string
	// replies are our answers to the program's requests, written in turn
	// by one goroutine (replyWriter); queued counts their bytes. Past
	// maxQueuedReplies or the program's MaxMessageBytes waiting, the
	// program (which is not reading them) is ended: errRequestFlood.
	replies chan []byte
	queued  int64

	closeOnce sync.Once
}

// waiter is a request waiting for its answer.
type waiter struct {
	ch chan delivery
	// line is the request's number among the lines written (lines),
	// set under mu when its write begins (under wmu, so in the order the
	// program reads them); 0 before. Numbered before the write, not
	// after: a program answers a line as soon as it has read it, which
	// may be before the writer has counted it (an error of id null that
	// answers rook's reply to a ping, given to the call before it), or
	// before rook has written it all (a line too long for it).
	line uint64
}

type delivery struct {
	m   *message
	n   int64 // bytes of the line it came in
	err error // the line carried the request's id but did not decode
}

func startStdio(s Spec, o Options, lim Limits, handle func(*message) *message) (*stdioTransport, error) {
	if s.Dir != "" {
		// exec's own failure would be a bare "chdir DIR: no such file or
		// directory": the directory was only where `mcp add` ran (a
		// checkout since removed), and the way out is not plain.
		fi, err := os.Stat(s.Dir)
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			return nil, unreachable(err, "its program runs in the directory the server was added from, %s, which is not there (%v): make it again, or add the server again from where its arguments name what they should (`rook mcp rm NAME`, then `rook mcp add` there)", s.Dir, err)
		}
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir // (Spec.Dir)
	// A server gets the few variables a program needs to run, not the
	// secrets in rook's environment; Spec.Env adds what it needs.
	cmd.Env = baseEnv()
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+s.Env[k])
	}
	// The values rook gives the program are masked in what it writes on
	// its stderr (passed on, and named in failures): a program that logs
	// its environment, or a token it was given, does not get it shown. A
	// value given by EnvFrom is a credential read at connect time; one
	// given by Env is never shown either (agent.MCPServer.Shown).
	secrets := slices.Collect(maps.Values(s.Env))
	for _, k := range slices.Sorted(maps.Keys(s.EnvFrom)) {
		v := o.Getenv(s.EnvFrom[k])
		if v == "" {
			return nil, &Failure{Kind: NeedsCredential, Msg: fmt.Sprintf("the variable %s for the server's %s is not set; set it, or add the server again with another (`rook mcp rm`, `rook mcp add`)", s.EnvFrom[k], k)}
		}
		cmd.Env = append(cmd.Env, k+"="+v)
		secrets = append(secrets, v)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	t := &stdioTransport{
		cmd: cmd, in: inW, handle: handle, maxMsg: lim.MaxMessageBytes,
		tail:    newTailWriter(o.Stderr, secrets),
		pending: map[string]*waiter{},
		replies: make(chan []byte, maxQueuedReplies),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, t.tail
	cmd.WaitDelay = time.Second // a grandchild holding stderr open must not hold Wait
	ownGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return nil, unreachable(err, "could not start %q: %v", s.Command, err)
	}
	go func() {
		t.waitErr = cmd.Wait()
		t.tail.flush() // a last line without a newline
		close(t.exited)
	}()
	go t.read(outR)
	go t.replyWriter()
	return t, nil
}

// maxQueuedReplies bounds the answers to a program's requests waiting to
// be written: a program that writes requests (pings, say) faster than it
// reads the answers, or without reading them at all, is ended past it,
// rather than making rook hold ever more of them.
const maxQueuedReplies = 256

// errRequestFlood ends a connection whose program sent more requests than
// rook holds answers for while it did not read them.
var errRequestFlood = &Failure{Kind: ProtocolError, Msg: fmt.Sprintf("the program sent requests to rook faster than it read the answers (more than %d waiting), so rook ended it: a server that floods its client, or one stuck; connect again to start it afresh (each rook command does)", maxQueuedReplies)}

// reply queues an answer to a program's request for replyWriter; false
// when the queue is full, by count or bytes.
func (t *stdioTransport) reply(m *message) bool {
	b, err := json.Marshal(m) // compact: no newline inside
	if err != nil {
		return true // nothing to send
	}
	b = append(b, '\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queued+int64(len(b)) > t.maxMsg {
		return false
	}
	select {
	case t.replies <- b:
		t.queued += int64(len(b))
		return true
	default:
		return false
	}
}

// replyWriter writes the queued answers in turn, each within 5s (a
// program not reading its input), until read stops.
func (t *stdioTransport) replyWriter() {
	for b := range t.replies {
		t.writeLine(nil, b, time.Now().Add(5*time.Second), nil)
		t.mu.Lock()
		t.queued -= int64(len(b))
		t.mu.Unlock()
	}
}

// read takes lines from the program until its stdout ends, delivering
// responses, answering requests, and ignoring notifications and lines that
// are not JSON-RPC (a server must not write them, some log there anyway),
// but for one that carries the id of a request waiting: that is its
// answer, malformed, and fails it at once.
func (t *stdioTransport) read(out *os.File) {
	defer out.Close()
	defer close(t.replies) // after done: no answer is queued past it
	br := bufio.NewReaderSize(out, 64<<10)
	var err error
lines:
	for {
		var line []byte
		if line, err = readLine(br, t.maxMsg); err != nil {
			break
		}
		msgs, derr := decodeMessages(line)
		if derr != nil {
			if t.failWaiting(undecodedIDs(line), derr, int64(len(line))) {
				continue
			}
			if text := strings.TrimSpace(string(line)); text != "" {
				t.mu.Lock()
				if t.junk == "" {
					t.junk = clean(string(t.tail.mask([]byte(text))), 120)
				}
				t.mu.Unlock()
			}
			continue
		}
		for _, m := range msgs {
			switch {
			case m.isResponse():
				if ch := t.take(m); ch != nil {
					ch <- delivery{m: m, n: int64(len(line))}
				}
			case m.isRequest():
				// Not inline: the program may be blocked writing to us
				// while we would be blocked writing to it. Queued, and
				// bounded: one goroutine each held as many as the
				// program wrote requests (60,000 lines made 60,000).
				if !t.reply(t.handle(m)) {
					err = errRequestFlood
					go t.close()
					break lines
				}
			}
		}
	}
	var big *tooLargeError
	if err != errRequestFlood && !errors.As(err, &big) {
		select { // the program closed its stdout, most likely by exiting
		case <-t.exited:
		case <-time.After(500 * time.Millisecond):
		}
		err = t.exitFailure(err)
	}
	t.mu.Lock()
	if t.err == nil { // not errPartWritten, which says why it ended
		t.err = err
	}
	close(t.done)
	t.mu.Unlock()
}

// take removes from pending and returns the channel of the request m
// answers, nil when none waits for it. An error with id null answers a
// line the program could not read (JSON-RPC 2.0: its id could not be
// told): with one request waiting, and no line written after it (its
// own may still be being written: a program may reject a line too long
// for it before rook has written it all), it is that one's. With several, or once rook has written another line after
// it (its reply to a request the program sent while at the call, a
// notification), rook cannot tell whose it is, and gives it to none:
// failing a request the program read and works on (a tool call that runs
// on) took the program's complaint about rook's reply for the tool's
// failure; each still ends with its answer or its time.
func (t *stdioTransport) take(m *message) chan delivery {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := idKey(m.ID)
	if nullID(m.ID) && m.Error != nil && len(t.pending) == 1 {
		for k, w := range t.pending {
			if w.line != 0 && w.line == t.lines {
				key = k
			}
		}
	}
	w := t.pending[key]
	delete(t.pending, key)
	if w == nil {
		return nil
	}
	return w.ch
}

// failWaiting fails, with the line's decode error err, the requests
// waiting for any of ids (those of a line that did not decode); n is the
// line's length. It says whether one was.
func (t *stdioTransport) failWaiting(ids []json.RawMessage, err error, n int64) bool {
	failed := false
	for _, id := range ids {
		t.mu.Lock()
		w := t.pending[idKey(id)]
		delete(t.pending, idKey(id))
		t.mu.Unlock()
		if w != nil {
			w.ch <- delivery{n: n, err: err}
			failed = true
		}
	}
	return failed
}

// stdoutJunk is the first line the program wrote on stdout that is not
// JSON-RPC, if any.
func (t *stdioTransport) stdoutJunk() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.junk
}

// exitFailure says how the program went away, with its last stderr line.
func (t *stdioTransport) exitFailure(readErr error) *Failure {
	how := "the program closed its output"
	cause := readErr
	select {
	case <-t.exited:
		how = "the program exited"
		var ee *exec.ExitError
		if errors.As(t.waitErr, &ee) {
			how = "the program exited (" + ee.ProcessState.String() + ")"
			cause = t.waitErr
		}
	default:
	}
	if last := t.tail.lastLine(); last != "" {
		how += "; its stderr ends: " + clean(last, 300)
	}
	return unreachable(cause, "%s", how)
}

// readLine reads one line of at most max bytes (a longer one is a
// *tooLargeError); a last line without a newline counts.
func readLine(br *bufio.Reader, max int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if int64(len(line)+len(chunk)) > max+1 {
			return nil, &tooLargeError{max}
		}
		line = append(line, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return line, nil
		case err != nil:
			return nil, err
		}
		return line, nil
	}
}

// errPartWritten ends a connection on which a message was only partly
// written (its time ran out while the program was not reading): whatever
// was written next would be read as the rest of that line, garbage.
var errPartWritten = &Failure{Kind: Unreachable, Msg: "the connection to the server was closed: a message to it was only partly written (the program stopped reading its input, or went away), so rook ended the program; connect again to start it afresh (each rook command does)"}

// partWrittenError is a write that ran out of time after some of the
// message's bytes, not all, were written.
type partWrittenError struct {
	n, total int
	err      error
}

func (e *partWrittenError) Error() string {
	return fmt.Sprintf("wrote %d of the message's %d bytes: %v", e.n, e.total, e.err)
}
func (e *partWrittenError) Unwrap() error { return e.err }

// write sends one message as a line. ctx's deadline bounds a write the
// program does not read, and ctx's end (an interrupt cancels it) stops
// it as the deadline would. A write stopped part way (a
// *partWrittenError) ends the connection: nothing more is written, and
// the program is ended (close) in the background.
// w, if not nil, is the request's waiter: its line is numbered once it
// is written whole.
func (t *stdioTransport) write(ctx context.Context, m *message, w *waiter) error {
	b, err := json.Marshal(m) // compact: no newline inside
	if err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	return t.writeLine(ctx.Done(), append(b, '\n'), deadline, w)
}

// writeLine is write of a message already made a line, bounded by
// deadline (none if zero) and stopped when stop closes (nil: never).
func (t *stdioTransport) writeLine(stop <-chan struct{}, b []byte, deadline time.Time, w *waiter) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	broken := t.err == errPartWritten
	if !broken {
		t.lines++
		if w != nil {
			w.line = t.lines
		}
	}
	t.mu.Unlock()
	if broken {
		return errPartWritten
	}
	t.in.SetWriteDeadline(deadline)
	if stop != nil {
		// The deadline alone was watched: an interrupt during a write
		// the program did not read (a large call, a program stuck)
		// waited for --timeout. A deadline in the past ends a blocked
		// write at once (os.ErrDeadlineExceeded, as a deadline run out).
		// The watcher is done before wmu is let go: a late one must not
		// cut the next line's write short.
		quit, watched := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-stop:
				t.in.SetWriteDeadline(time.Unix(1, 0))
			case <-quit:
			}
		}()
		defer func() { close(quit); <-watched }()
	}
	n, err := t.in.Write(b)
	// Only a write whose time ran out: one that failed (the program
	// exited, or closed its input, part way) goes on as any failed
	// write, said with why the program ended, which rook did not do.
	if err != nil && n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		t.mu.Lock()
		if t.err == nil {
			t.err = errPartWritten
		}
		t.mu.Unlock()
		go t.close()
		return &partWrittenError{n, len(b), err}
	}
	return err
}

func (t *stdioTransport) roundTrip(ctx context.Context, req *message, limit int64) (*message, int64, error) {
	key := idKey(req.ID)
	ch := make(chan delivery, 1)
	w := &waiter{ch: ch}
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return nil, 0, t.err
	}
	t.pending[key] = w
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
	}()
	if err := t.write(ctx, req, w); err != nil {
		if err == errPartWritten {
			return nil, 0, err
		}
		var part *partWrittenError
		if errors.As(err, &part) && part.n == part.total-1 {
			// All but the newline: a program that reads JSON values,
			// not lines, may have had the whole request. Its time ran
			// out, and write ended the program: not a program that
			// went away, nor one that could not be reached.
			return nil, 0, errAllButNewline
		}
		// Not written whole: the program never had the request.
		if ctx.Err() == context.Canceled {
			// Given up on (an interrupt) while it was written, which
			// stopped the write (writeLine).
			if part != nil {
				return nil, 0, errPartlySentCancelled
			}
			return nil, 0, errNotSentCancelled
		}
		if ctx.Err() == context.DeadlineExceeded || errors.Is(err, os.ErrDeadlineExceeded) {
			if part != nil {
				return nil, 0, errPartlySent
			}
			return nil, 0, errNotSent // ctx's deadline (see notify)
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		select {
		case <-t.done:
			return nil, 0, t.err
		case <-time.After(time.Second):
		}
		return nil, 0, unreachable(err, "could not write to the program: %v", err)
	}
	select {
	case d := <-ch:
		return t.delivered(d, req.Method, limit)
	case <-t.done:
		select {
		case d := <-ch:
			return t.delivered(d, req.Method, limit)
		default:
		}
		// The request was written: the program may have read it and
		// acted before it went away, or rook ended it.
		if t.err == errRequestFlood {
			f := *errRequestFlood
			f.answerLost = true
			return nil, 0, &f
		}
		return nil, 0, lostAnswer(t.err)
	case <-ctx.Done():
		sendCancelled(ctx, t, req) // the program had the request whole
		return nil, 0, ctx.Err()
	}
}

func (t *stdioTransport) delivered(d delivery, method string, limit int64) (*message, int64, error) {
	if d.n > limit {
		return nil, d.n, &tooLargeError{limit}
	}
	if d.err != nil {
		return nil, d.n, malformedAnswer(method, d.err)
	}
	return d.m, d.n, nil
}

func (t *stdioTransport) notify(ctx context.Context, msg *message) error {
	t.mu.Lock()
	err := t.err
	t.mu.Unlock()
	if err != nil {
		return err
	}
	if err := t.write(ctx, msg, nil); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The write's deadline is ctx's: on a loaded machine the
			// pipe's can fire before ctx's timer has, and the timeout
			// was said as a program that could not be written to.
			return context.DeadlineExceeded
		}
		return unreachable(err, "could not write to the program: %v", err)
	}
	return nil
}

func (t *stdioTransport) negotiated(string) {}

// close ends the program: stdin closed, then SIGTERM, then SIGKILL, each
// after stdioGrace.
func (t *stdioTransport) close() error {
	t.closeOnce.Do(func() {
		t.in.Close()
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			select {
			case <-t.exited:
				return
			case <-time.After(stdioGrace):
			}
			signalGroup(t.cmd.Process, sig)
		}
		<-t.exited
	})
	return nil
}

// tailWriter passes a program's stderr on and keeps its end for messages,
// with the values the program was given masked (xxxxx). A line is held
// back until it ends, so that a value split over two writes is masked
// whole. A failing destination is ignored: the program's stderr must not
// break.
type tailWriter struct {
	w       io.Writer
	secrets [][]byte // longest first, none holding a newline
	mu      sync.Mutex
	buf     []byte // the end of what was passed on
	held    []byte // the start of a line not yet ended
	unended bool   // what was passed on does not end with a newline
}

// maxHeld bounds a line held back: of a longer one not yet ended (a
// progress bar), all but the bytes that may begin a value are passed on.
const maxHeld = 4 << 10

// newTailWriter passes what is written on to w, masking secrets: each
// line of one, of at least 4 bytes (shorter ones would mask common text).
func newTailWriter(w io.Writer, secrets []string) *tailWriter {
	t := &tailWriter{w: w}
	seen := map[string]bool{}
	for _, s := range secrets {
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if len(line) >= 4 && !seen[line] {
				seen[line] = true
				t.secrets = append(t.secrets, []byte(line))
			}
		}
	}
	slices.SortFunc(t.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return t
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.secrets) == 0 {
		t.pass(p)
		return len(p), nil
	}
	t.held = append(t.held, p...)
	var out []byte
	if i := bytes.LastIndexByte(t.held, '\n'); i >= 0 {
		out = t.mask(t.held[:i+1])
		t.held = append([]byte(nil), t.held[i+1:]...)
	}
	if len(t.held) > maxHeld {
		m := t.mask(t.held)
		keep := min(len(t.secrets[0])-1, len(m))
		out = append(out, m[:len(m)-keep]...)
		t.held = append([]byte(nil), m[len(m)-keep:]...)
	}
	t.pass(out)
	return len(p), nil
}

// flush passes on a line held back, and ends the program's last line
// if it did not: the program has exited, and what is written after it on
// the same stream (rook's error, the JSON error line under --json) must
// start a line of its own, not be glued to the program's text.
func (t *tailWriter) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pass(t.mask(t.held))
	t.held = nil
	if t.unended {
		t.w.Write([]byte("\n"))
		t.unended = false
	}
}

// mask is b with every secret replaced by xxxxx.
func (t *tailWriter) mask(b []byte) []byte {
	for _, s := range t.secrets {
		b = bytes.ReplaceAll(b, s, []byte("xxxxx"))
	}
	return b
}

// pass keeps p's end and writes it on; t.mu is held.
func (t *tailWriter) pass(p []byte) {
	if len(p) == 0 {
		return
	}
	t.unended = p[len(p)-1] != '\n'
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-4<<10:]...)
	}
	t.w.Write(p)
}

// lastLine is the last line the program wrote on its stderr, masked.
func (t *tailWriter) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := append(append([]byte(nil), t.buf...), t.mask(t.held)...)
	lines := strings.Split(string(bytes.TrimSpace(all)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// inheritedEnv are the variables a stdio server inherits from rook (as the
// MCP SDKs and the Inspector do): enough to find programs and a home.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "XDG_RUNTIME_DIR", "SYSTEMROOT"}

func baseEnv() []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
