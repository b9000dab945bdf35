package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// McpAddCmd is `rook mcp add`. Its repeatable flags take each value whole
// (sep:"none"): kong's default cut at commas made `--arg /src,/docs` two
// arguments and `--header X-Scopes=read,write` two headers. An empty
// --arg is an argument a program may take, as from a shell (empty:"value"),
// and so is one that begins with '-', `--arg -y` (hyphen:"value");
// Run says what an empty --url or --command lacks (empty:"own").
type McpAddCmd struct {
	Name      string        `arg:"" help:"A name to call the server by (lowercase letters, digits, . _ -)."`
	URL       string        `name:"url" empty:"own" help:"The server's streamable HTTP endpoint." xor:"transport" placeholder:"URL"`
	Header    []string      `sep:"none" help:"An HTTP header to send, K=V (repeatable; a comma is part of V); its value is saved as given, so a credential is refused: use --header-env." placeholder:"K=V"`
	HeaderEnv []string      `name:"header-env" sep:"none" help:"An HTTP header to send with the value of an environment variable, K=VAR (repeatable; its name is stored, never the value)." placeholder:"K=VAR"`
	BearerEnv nonEmpty      `name:"bearer-env" help:"Send 'Authorization: Bearer' with the value of this environment variable (its name is stored, never the value)." placeholder:"VAR"`
	Command   string        `empty:"own" help:"Run the server as a program speaking MCP on stdio." xor:"transport" placeholder:"CMD"`
	Arg       []string      `sep:"none" empty:"value" hyphen:"value" help:"An argument for --command, taken whole (repeatable, one word each: a comma is part of it, a leading - too, and an empty value is an empty argument)." placeholder:"A"`
	Env       []string      `sep:"none" help:"An environment variable for --command, K=V (repeatable; a comma is part of V); its value is saved as given, so a credential is refused: use --env-from." placeholder:"K=V"`
	EnvFrom   []string      `name:"env-from" sep:"none" help:"An environment variable for --command with the value of one of rook's, K=VAR (repeatable; its name is stored, never the value)." placeholder:"K=VAR"`
	Offline   bool          `help:"Save the server without connecting to it now."`
	MaxTools  int           `name:"max-tools" help:"How many of its tools may be on at once." default:"16"`
	Timeout   time.Duration `help:"How long discovery may take (default: config.toml's [mcp.discovery] timeout, else 30s)." placeholder:"D"`
}

// McpLsCmd is `rook mcp ls`.
type McpLsCmd struct{}

// McpToolsCmd is `rook mcp tools`.
type McpToolsCmd struct {
	Name string `arg:"" help:"The server."`
}

// McpSyncCmd is `rook mcp sync`.
type McpSyncCmd struct {
	Name    string        `arg:"" help:"The server."`
	Timeout time.Duration `help:"How long discovery may take (default: config.toml's [mcp.discovery] timeout, else 30s)." placeholder:"D"`
}

// McpSetCmd is `rook mcp set`.
type McpSetCmd struct {
	Name       string `arg:"" help:"The server."`
	Tool       string `arg:"" help:"The tool."`
	On         bool   `help:"Offer the tool at all." xor:"on"`
	Off        bool   `help:"Do not offer it." xor:"on"`
	ReadOnly   bool   `name:"read-only" help:"It only reads: it may run where only reading is allowed." xor:"ro"`
	NoReadOnly bool   `name:"no-read-only" help:"It may change things." xor:"ro"`
	Approval   bool   `help:"Ask before it runs." xor:"ap"`
	NoApproval bool   `name:"no-approval" help:"Run it without asking." xor:"ap"`
}

// McpLimitCmd is `rook mcp limit`.
type McpLimitCmd struct {
	Name string `arg:"" help:"The server."`
	N    int    `arg:"" help:"How many of its tools may be on at once."`
}

// McpCallCmd is `rook mcp call`.
type McpCallCmd struct {
	Name     string        `arg:"" help:"The server."`
	Tool     string        `arg:"" help:"The tool."`
	Args     string        `arg:"" optional:"" help:"The arguments, a JSON object (default {}); - reads them from standard input." placeholder:"JSON"`
	ArgsFile *string       `name:"args-file" empty:"own" help:"Read the arguments, a JSON object, from FILE (- for standard input): for arguments larger than a command line holds." placeholder:"FILE"`
	Yes      bool          `help:"Approve a tool that asks for approval, without asking."`
	ReadOnly bool          `name:"read-only" help:"Refuse the call unless the tool is set read-only."`
	Timeout  time.Duration `help:"How long the call may take, the server's start and handshake included." default:"60s"`
}

// McpRmCmd is `rook mcp rm`.
type McpRmCmd struct {
	Name string `arg:"" help:"The server."`
}

func splitKV(kvs []string, what string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErr("%s %q: give K=V", what, kv)
		}
		out[k] = v
	}
	return out, nil
}

// splitPair reads a pair of flags giving a server's headers or its
// program's environment: by value (flag K=V), and by the name of one of
// rook's variables (envFlag K=VAR; nil when none is given).
func splitPair(byValue, fromEnv []string, flag, envFlag string) (map[string]string, map[string]string, error) {
	vals, err := splitKV(byValue, flag)
	if err != nil {
		return nil, nil, err
	}
	vars, err := splitKV(fromEnv, envFlag)
	if err != nil {
		return nil, nil, err
	}
	if len(vars) == 0 {
		vars = nil
	}
	return vals, vars, nil
}

// checkSet refuses a variable named by envFlag that is empty here: the
// server would be added without the credential it holds. An --offline
// add is for setting up before the variable is.
func checkSet(vars map[string]string, envFlag string) error {
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if os.Getenv(vars[k]) == "" {
			return usageErr("%s %s=%s: that variable is empty here", envFlag, k, vars[k])
		}
	}
	return nil
}

// clientOptions bounds a command's talk with a server: discovery by the
// store's [mcp.discovery] settings, and everything by --timeout when given
// (the connection, the discovery and the call alike).
func clientOptions(r *agent.Rook, e *Env, timeout time.Duration) (mcpclient.Options, error) {
	o := mcpclient.Options{ClientName: "rook", ClientVersion: "dev", Getenv: os.Getenv, Stderr: e.Stderr}
	o.Limits = mcpclient.DefaultLimits()
	cfg, err := r.Config()
	if err != nil {
		return o, err
	}
	d := cfg.MCP.Discovery
	if d.MaxBytes > 0 {
		o.Limits.MaxBytes = d.MaxBytes
	}
	if d.MaxTools > 0 {
		o.Limits.MaxTools = d.MaxTools
	}
	if d.MaxPages > 0 {
		o.Limits.MaxPages = d.MaxPages
	}
	if d.Timeout.Duration > 0 {
		o.Limits.Timeout = d.Timeout.Duration
	}
	if d.ConnectTimeout.Duration > 0 {
		o.Limits.ConnectTimeout = d.ConnectTimeout.Duration
	}
	if timeout > 0 {
		o.Limits.Timeout, o.Limits.CallTimeout = timeout, timeout
		o.Limits.ConnectTimeout = min(o.Limits.ConnectTimeout, timeout)
	}
	return o, nil
}

// discoveryContext bounds a discovery by the timeouts it runs with (the
// flag's, config.toml's, or the defaults), with room for the client to say
// which one passed before the context does. The sum saturates: a bound at
// the longest duration config.toml takes (about 292 years) wrapped past
// it to a negative one, a context already expired.
func discoveryContext(co mcpclient.Options) (context.Context, context.CancelFunc) {
	d := time.Duration(math.MaxInt64)
	if sum := co.Limits.ConnectTimeout + co.Limits.Timeout; sum >= co.Limits.ConnectTimeout && sum <= d-5*time.Second {
		d = sum + 5*time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// checkError marks an error found before the server was asked: it is
// returned as it is, not as a failed discovery.
type checkError struct{ error }

func (e checkError) Unwrap() error { return e.error }

// handshakeBound is the handshake's own bound (config.toml's
// [mcp.discovery] connect_timeout, else the default) when a --timeout of
// timeout cut it shorter in co; else 0.
func handshakeBound(r *agent.Rook, e *Env, co mcpclient.Options, timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return 0
	}
	if full, err := clientOptions(r, e, 0); err == nil && full.Limits.ConnectTimeout > co.Limits.ConnectTimeout {
		return full.Limits.ConnectTimeout
	}
	return 0
}

// handshakeCut is the error of a server that did not complete the
// handshake within a --timeout shorter than the handshake's own bound
// (handshake, from handshakeBound), or nil when err is another failure.
// The time that ran out was the user's: not a sign that the server is
// unreachable (it may be slow to start, as npx is), so the caller leaves
// its status as it was. outcome says what did not happen.
func handshakeCut(name string, timeout, handshake time.Duration, err error, outcome string) error {
	if handshake <= 0 || err == nil || agent.MCPCallSent(err) || mcpclient.KindOf(err) != mcpclient.Unreachable || !errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return fmt.Errorf("server %s did not complete the handshake within %v, all --timeout allows (the handshake alone may take %v, config.toml's [mcp.discovery] connect_timeout): %s; a longer --timeout lets a slow server start", name, timeout, handshake, outcome)
}

// serverFailed is the failure of a server (err, from talking to it) as
// rook mcp add, sync and call say it: naming the server first, "server
// NAME: ", then what failed and what to do (err's own words). A message
// that names the server already is kept as it is. The error stays in the
// chain, for its kind and exit code.
func serverFailed(name string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "server "+name+" ") || strings.HasPrefix(err.Error(), "server "+name+":") {
		return err
	}
	return fmt.Errorf("server %s: %w", name, err)
}

// readToolList reads a server's tool list with no store open: check
// (on the store opened for reading) says which setup to read it with, or
// refuses; its error comes back as it is. handshake is handshakeBound's.
func readToolList(e *Env, timeout time.Duration, check func(r *agent.Rook) (mcpclient.Spec, error)) (list *agent.MCPToolList, handshake time.Duration, err error) {
	if e.lockWaitErr != nil {
		return nil, 0, checkError{e.lockWaitErr} // the write after would fail
	}
	r, err := e.openRook(false)
	if err != nil {
		return nil, 0, checkError{err}
	}
	co, err := clientOptions(r, e, timeout)
	var spec mcpclient.Spec
	if err == nil {
		handshake = handshakeBound(r, e, co, timeout)
		spec, err = check(r)
	}
	r.Close()
	if err != nil {
		return nil, 0, checkError{err}
	}
	ctx, cancel := discoveryContext(co)
	defer cancel()
	withServer(ctx, func(ctx context.Context) { list, err = agent.DiscoverMCP(ctx, spec, co) })
	return list, handshake, err
}

// Run adds a server.
func (c *McpAddCmd) Run(e *Env) error {
	if c.URL == "" && c.Command == "" {
		return usageErr("give the server's --url (streamable HTTP) or --command (stdio)")
	}
	if c.MaxTools < 1 || c.MaxTools > 1000 {
		return usageErr("--max-tools %d: give 1 to 1000", c.MaxTools)
	}
	if c.Timeout < 0 {
		return usageErr(negativeTimeout)
	}
	if c.URL != "" && (len(c.Arg) > 0 || len(c.Env) > 0 || len(c.EnvFrom) > 0) {
		return usageErr("--arg, --env and --env-from go with --command, not --url")
	}
	if c.Command != "" && (len(c.Header) > 0 || len(c.HeaderEnv) > 0 || c.BearerEnv != "") {
		return usageErr("--header, --header-env and --bearer-env go with --url, not --command")
	}
	headers, headerEnv, err := splitPair(c.Header, c.HeaderEnv, "--header", "--header-env")
	if err != nil {
		return err
	}
	env, envFrom, err := splitPair(c.Env, c.EnvFrom, "--env", "--env-from")
	if err != nil {
		return err
	}
	command := c.Command
	if strings.ContainsRune(command, filepath.Separator) && !filepath.IsAbs(command) {
		// A path from here (./srv, bin/srv): saved as typed, every later
		// call and sync from another directory ran another program or
		// none. A bare name (npx) is looked up in PATH when it starts.
		dir, err := e.workDir()
		if err != nil {
			return err
		}
		command = filepath.Join(dir, command)
	}
	spec := mcpclient.Spec{Name: c.Name, URL: c.URL, Headers: headers, BearerEnv: string(c.BearerEnv), HeaderEnv: headerEnv, Command: command, Args: c.Arg, Env: env, EnvFrom: envFrom}
	if command != "" {
		// The program runs, at every call and sync, in the directory it
		// was added from: an argument naming a file from here
		// (`--arg server.py`) ran from any other directory named
		// another file, or none, and the server was marked unreachable.
		// (From a directory removed since, it runs in rook's, as before.)
		if dir, err := e.workDir(); err == nil {
			spec.Dir = dir
		}
	}
	// The engine refuses a credential given by value (MCPAdd checks the
	// same): asked here, before the store is opened.
	if err := agent.CheckMCPSpec(spec); err != nil {
		return err
	}
	if !c.Offline {
		if err := checkSet(headerEnv, "--header-env"); err != nil {
			return err
		}
		if err := checkSet(envFrom, "--env-from"); err != nil {
			return err
		}
		if c.BearerEnv != "" && os.Getenv(string(c.BearerEnv)) == "" {
			return usageErr("--bearer-env %s: that variable is empty here", c.BearerEnv)
		}
	}
	// The tool list is read with no store open (checked first on the
	// store opened for reading), then added with it open for writing: a
	// slow server keeps no other rook from writing (see McpCallCmd.Run).
	e.holdNotes = true
	defer e.releaseNotes()
	var list *agent.MCPToolList
	if !c.Offline {
		var handshake time.Duration
		if list, handshake, err = readToolList(e, c.Timeout, func(r *agent.Rook) (mcpclient.Spec, error) {
			return spec, r.CheckMCPAdd(spec)
		}); err != nil {
			var ce checkError
			if errors.As(err, &ce) {
				return ce.error
			}
			if cut := handshakeCut(c.Name, c.Timeout, handshake, err, "nothing saved (`--offline` saves the server without connecting)"); cut != nil {
				return cut
			}
			return agent.AddFailed(serverFailed(c.Name, err))
		}
	}
	var s *agent.MCPServer
	var rep agent.SyncReport
	err = e.write(func(r *agent.Rook) error {
		co, err := clientOptions(r, e, c.Timeout)
		if err != nil {
			return err
		}
		ctx, cancel := discoveryContext(co)
		defer cancel()
		s, rep, err = r.MCPAdd(ctx, agent.MCPAddOptions{Spec: spec, MaxTools: c.MaxTools, Offline: c.Offline, Client: co, Discovery: list})
		return err
	})
	if err != nil {
		return err
	}
	// Said only once Close has made the server's setup durable.
	return printServerChange(e, "added", s, rep)
}

// maxListed is how many tools a line of add's or sync's text names.
const maxListed = 10

func printServerChange(e *Env, what string, s *agent.MCPServer, rep agent.SyncReport) error {
	if e.JSON {
		return e.printJSON(map[string]any{"server": s.Shown(), "changes": rep})
	}
	w := e.Stdout
	if s.Status == agent.MCPOffline {
		fmt.Fprintf(w, "%s %s (%s), not connected: `rook mcp sync %s` reads its tools\n", what, s.Name, s.Transport(), s.Name)
		return nil
	}
	fmt.Fprintf(w, "%s %s (%s, %s): %d tool(s), %d on\n", what, s.Name, s.Transport(), cleanLine(s.Server), len(s.Tools), s.ToolsOn())
	leftOff := map[string]bool{}
	for _, n := range rep.LeftOff {
		leftOff[n] = true
	}
	var newOn, newOff []string
	for _, n := range rep.New {
		if t := s.Tool(n); t != nil && t.On {
			newOn = append(newOn, n)
		} else if !leftOff[n] {
			newOff = append(newOff, n)
		}
	}
	// A list names at most maxListed tools, then how many more: a server
	// of hundreds of tools made a line of hundreds of names. `rook mcp
	// tools` lists them all, and --json names every one.
	list := func(names []string) string {
		shown := names[:min(len(names), maxListed)]
		clean := make([]string, len(shown))
		for i, n := range shown {
			clean[i] = cleanLine(n)
		}
		out := strings.Join(clean, ", ")
		if more := len(names) - len(shown); more > 0 {
			out += fmt.Sprintf(" and %d more", more)
		}
		return out
	}
	if len(newOn) > 0 {
		fmt.Fprintf(w, "new, switched on: %s\n", list(newOn))
	}
	if len(newOff) > 0 {
		fmt.Fprintf(w, "new, switched off until you turn them on: %s\n", list(newOff))
	}
	if len(rep.Returned) > 0 {
		fmt.Fprintf(w, "back, with their settings: %s\n", list(rep.Returned))
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(w, "missing (kept with their settings, in case they return): %s\n", list(rep.Missing))
	}
	if len(rep.ReadOnlyOff) > 0 {
		fmt.Fprintf(w, "no longer claimed read-only by the server, so no longer set read-only: %s (`rook mcp set %s TOOL --read-only` if you know better)\n", list(rep.ReadOnlyOff), s.Name)
	}
	if len(rep.ReadOnlyKept) > 0 {
		fmt.Fprintf(w, "no longer claimed read-only by the server, but kept read-only: %s (saved by an older rook, which did not record whether you or the claim set it, so taken as yours: `rook mcp set %s TOOL --no-read-only` if it may change things, `--read-only` to keep it)\n", list(rep.ReadOnlyKept), s.Name)
	}
	if len(rep.Changed) > 0 {
		fmt.Fprintf(w, "changed by the server (description, arguments or claims): %s (`rook mcp tools %s` shows what they say now)\n", list(rep.Changed), s.Name)
	}
	if len(rep.LeftOff) > 0 {
		fmt.Fprintf(w, "left off %d tool(s), past the limit of %d on at once: %s (`rook mcp set %s TOOL --on` after turning others off)\n",
			len(rep.LeftOff), s.MaxTools, list(rep.LeftOff), s.Name)
	}
	fmt.Fprintf(w, "the descriptions are the server's words: read them with `rook mcp tools %s` before trusting a tool\n", s.Name)
	return nil
}

// Run lists the servers.
func (c *McpLsCmd) Run(e *Env) error {
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	// The servers that read are listed, and one whose state does not is
	// listed flagged (status unreadable, "?" for what is not known) and
	// named on stderr with what to do, and ls exits 1, as checkpoint ls
	// does with a checkpoint that does not read.
	list, err := r.MCPServers()
	var unread *agent.MCPStatesError
	if err != nil && !errors.As(err, &unread) {
		return err
	}
	done := func() error {
		if unread == nil {
			return nil
		}
		if !e.JSON {
			for _, se := range unread.Errs {
				fmt.Fprintf(e.Stderr, "rook: %s\n", terminalLine(se.Error()))
			}
		}
		return &exitError{code: ExitFailure, msg: unread.Error()}
	}
	unreadBy := map[string]*agent.MCPStateError{}
	if unread != nil {
		for _, se := range unread.Errs {
			unreadBy[se.Name] = se
		}
	}
	var live []*agent.MCPServer
	for _, s := range list {
		if !s.Removed {
			live = append(live, s.Shown())
		}
	}
	if e.JSON {
		if live == nil {
			live = []*agent.MCPServer{}
		}
		// A failed write is Main's to tell, after done's verdict.
		if err := unprinted(e.printJSON(live)); err != nil {
			return err
		}
		return done()
	}
	if len(live) == 0 {
		fmt.Fprintln(e.Stdout, "no MCP servers: `rook mcp add NAME --url URL` or `--command CMD` adds one")
		return nil
	}
	fmt.Fprintf(e.Stdout, "%-16s %-9s %-16s %-9s %-16s %s\n", "name", "transport", "status", "tools on", "last sync", "last error")
	for _, s := range live {
		if s.Status == agent.MCPUnreadable {
			what := fmt.Sprintf("its state does not read: `rook store verify`; `rook mcp rm %s`", s.Name)
			if se := unreadBy[s.Name]; se != nil && se.Meta {
				// Not mcp rm, which cannot retag a session whose
				// metadata does not read (the error on stderr says
				// what to do).
				what = fmt.Sprintf("its session's metadata does not read: `rook store verify`; `rook session rm %s` (its calls too)", se.Session)
			}
			fmt.Fprintf(e.Stdout, "%-16s %-9s %-16s %-9s %-16s %s\n", s.Name, "?", s.Status, "?", "?", what)
			continue
		}
		sync := "never"
		if !s.LastSync.IsZero() {
			sync = shownTime(s.LastSync)
		}
		fmt.Fprintf(e.Stdout, "%-16s %-9s %-16s %-9s %-16s %s\n", s.Name, s.Transport(), s.Status, fmt.Sprintf("%d/%d", s.ToolsOn(), len(s.Tools)), sync, cleanLine(firstLine(s.LastError)))
	}
	return done()
}

func firstLine(s string) string {
	s = textLines(s)[0]
	if len(s) > 80 {
		// Cut on a character boundary: half a character shows as U+FFFD.
		s = s[:agent.CutUTF8([]byte(s), 77)] + "..."
	}
	return s
}

// Run shows a server's tools.
func (c *McpToolsCmd) Run(e *Env) error {
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	s, _, err := r.MCPServer(c.Name)
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(s.Shown())
	}
	fmt.Fprintf(e.Stdout, "%s: %d tool(s), %d on (at most %d)\n", s.Name, len(s.Tools), s.ToolsOn(), s.MaxTools)
	// Tools not read yet, or read before the server stopped answering,
	// are not the server's tools now: said, rather than shown as if.
	switch {
	case s.Status == agent.MCPOffline && s.LastSync.IsZero():
		fmt.Fprintf(e.Stdout, "not connected yet: `rook mcp sync %s` reads its tools\n", s.Name)
	case s.Status != agent.MCPOK:
		asOf := "never synced"
		if !s.LastSync.IsZero() {
			asOf = "the tools are as of the last sync, " + shownTime(s.LastSync)
		}
		lastErr := textLines(s.Shown().LastError)[0] // whole: ls cuts it to fit a column
		fmt.Fprintf(e.Stdout, "status %s: %s (%s)\n", s.Status, cleanLine(lastErr), asOf)
	}
	for _, t := range s.Tools {
		title := ""
		if t.Title != "" {
			title = " — " + cleanLine(t.Title)
		}
		fmt.Fprintf(e.Stdout, "\n%s%s%s\n", cleanLine(t.Name), title, missingNote(t))
		fmt.Fprintf(e.Stdout, "  settings: %s, %s, %s\n", onOff(t.On, "on", "off"), onOff(t.ReadOnly, "read-only", "may change things"), onOff(t.Approval, "asks for approval", "runs without asking"))
		fmt.Fprintf(e.Stdout, "  the server claims: %s\n", claims(t.Claims))
		if t.ReadOnly && t.ReadOnlyLegacy && (t.Claims.ReadOnlyHint == nil || !*t.Claims.ReadOnlyHint) {
			fmt.Fprintf(e.Stdout, "  read-only was saved by an older rook, which did not record whether you or the claim set it, so it is kept as yours, but the server does not claim it: `rook mcp set %s %s --no-read-only` if it may change things, `--read-only` to keep it\n", s.Name, cleanLine(t.Name))
		}
		if params := schemaSummary(t.Schema); params != "" {
			fmt.Fprintf(e.Stdout, "  arguments: %s\n", params)
		}
		if d := strings.TrimSpace(t.Description); d != "" {
			fmt.Fprintln(e.Stdout, "  description (written by the server):")
			for _, line := range textLines(d) {
				fmt.Fprintf(e.Stdout, "    %s\n", cleanLine(line))
			}
		}
	}
	return nil
}

func missingNote(t agent.MCPTool) string {
	if t.Missing {
		return "  (missing since the last sync; settings kept)"
	}
	return ""
}

func onOff(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// textLines splits a server's text into lines at any line end: \n, and
// \r\n or a lone \r as a server written on Windows (or reading its text
// from such files) sends; a \r left in a line showed as '?', text the
// server never wrote.
func textLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n")
}

// cleanLine keeps a server's text from driving the terminal: control
// characters, and the bidi controls that would reorder the rest of the
// line (unsafeForTerminal), show as '?'.
func cleanLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\t' && unsafeForTerminal(r) {
			return '?'
		}
		return r
	}, s)
}

func claims(a mcpclient.Annotations) string {
	var out []string
	for _, c := range []struct {
		name string
		v    *bool
	}{{"read-only", a.ReadOnlyHint}, {"destructive", a.DestructiveHint}, {"idempotent", a.IdempotentHint}, {"open world", a.OpenWorldHint}} {
		if c.v != nil {
			out = append(out, fmt.Sprintf("%s: %v", c.name, *c.v))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ") + " (hints, not guarantees)"
}

// schemaSummary lists a JSON Schema's properties: name:type, required
// ones marked with *. Each part is read on its own, without converting
// values: a property whose schema is not an object (true, valid JSON
// Schema) or a required list holding a non-string used to fail the whole
// decoding, and the arguments line vanished without a word.
func schemaSummary(raw json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []json.RawMessage          `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		var name string
		if json.Unmarshal(r, &name) == nil {
			req[name] = true
		}
	}
	var names []string
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		mark := ""
		if req[n] {
			mark = "*"
		}
		parts = append(parts, fmt.Sprintf("%s%s:%s", cleanLine(n), mark, schemaType(s.Properties[n])))
	}
	if len(req) == 0 {
		return strings.Join(parts, " ")
	}
	return strings.Join(parts, " ") + "  (* required)"
}

// schemaType is a property schema's type as the server wrote it: a name
// ("string"), names ([string null]), else its JSON on one line; "any"
// where it gives none.
func schemaType(raw json.RawMessage) string {
	var p struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(raw, &p) != nil || len(p.Type) == 0 || string(p.Type) == "null" {
		return "any"
	}
	var name string
	if json.Unmarshal(p.Type, &name) == nil {
		return cleanLine(name)
	}
	var names []string
	if json.Unmarshal(p.Type, &names) == nil {
		return cleanLine("[" + strings.Join(names, " ") + "]")
	}
	return cleanLine(string(compactJSON(p.Type)))
}

// negativeTimeout refuses a --timeout of add or sync below 0.
const negativeTimeout = "--timeout must not be negative (none or 0: config.toml's [mcp.discovery] timeout, else 30s)"

// Run reads a server's tools again.
func (c *McpSyncCmd) Run(e *Env) error {
	if c.Timeout < 0 {
		return usageErr(negativeTimeout)
	}
	// Read with no store open, applied with it open for writing (see
	// McpAddCmd.Run).
	e.holdNotes = true
	defer e.releaseNotes()
	var spec mcpclient.Spec
	list, handshake, derr := readToolList(e, c.Timeout, func(r *agent.Rook) (mcpclient.Spec, error) {
		s, _, err := r.MCPServer(c.Name)
		if err != nil {
			return spec, err
		}
		spec = s.Spec
		return spec, nil
	})
	var ce checkError
	if errors.As(derr, &ce) {
		return ce.error
	}
	if cut := handshakeCut(c.Name, c.Timeout, handshake, derr, "its tools were not read; its setup and status are kept"); cut != nil {
		// Not applied: ApplyMCPSync would mark a server that may only be
		// slow to start unreachable (as `rook mcp call` does not).
		return cut
	}
	var s *agent.MCPServer
	var rep agent.SyncReport
	err := e.write(func(r *agent.Rook) error {
		var err error
		s, rep, err = r.ApplyMCPSync(c.Name, spec, list, derr)
		if err != nil && s != nil {
			if err == derr {
				err = serverFailed(c.Name, err)
			}
			return fmt.Errorf("%w (its setup is kept; status %s)", err, s.Status)
		}
		return err
	})
	if err != nil {
		return err
	}
	return printServerChange(e, "synced", s, rep)
}

// Run changes a tool's settings.
func (c *McpSetCmd) Run(e *Env) error {
	var set agent.MCPToolSettings
	pick := func(yes, no bool) *bool {
		if !yes && !no {
			return nil
		}
		return &yes
	}
	set.On, set.ReadOnly, set.Approval = pick(c.On, c.Off), pick(c.ReadOnly, c.NoReadOnly), pick(c.Approval, c.NoApproval)
	if set.On == nil && set.ReadOnly == nil && set.Approval == nil {
		return usageErr("say what to set: --on/--off, --read-only/--no-read-only, --approval/--no-approval")
	}
	var s *agent.MCPServer
	err := e.write(func(r *agent.Rook) (err error) {
		s, err = r.MCPSet(c.Name, c.Tool, set)
		return err
	})
	if err != nil {
		return err
	}
	t := s.Tool(c.Tool)
	if e.JSON {
		return e.printJSON(t)
	}
	fmt.Fprintf(e.Stdout, "%s %s: %s, %s, %s\n", s.Name, t.Name, onOff(t.On, "on", "off"), onOff(t.ReadOnly, "read-only", "may change things"), onOff(t.Approval, "asks for approval", "runs without asking"))
	return nil
}

// Run sets how many tools may be on.
func (c *McpLimitCmd) Run(e *Env) error {
	var s *agent.MCPServer
	err := e.write(func(r *agent.Rook) (err error) {
		s, err = r.MCPLimit(c.Name, c.N)
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(map[string]any{"server": s.Name, "max_tools": s.MaxTools, "on": s.ToolsOn()})
	}
	fmt.Fprintf(e.Stdout, "%s: at most %d tools on at once (%d on now)\n", s.Name, s.MaxTools, s.ToolsOn())
	return nil
}

// Run removes a server.
func (c *McpRmCmd) Run(e *Env) error {
	if err := e.write(func(r *agent.Rook) error { return r.MCPRemove(c.Name) }); err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(map[string]any{"removed": c.Name})
	}
	fmt.Fprintf(e.Stdout, "removed %s (its calls stay in its session: `rook session ls --all`)\n", c.Name)
	return nil
}

// recordLockWait is the least a call made waits for the writer lock to
// be recorded: the writers an agent's hooks start hold it for
// milliseconds, an import for longer. (A variable for the tests.)
var recordLockWait = 30 * time.Second

// Run calls a tool.
func (c *McpCallCmd) Run(e *Env) (err error) {
	if c.Timeout <= 0 {
		// 0 is no limit rook could keep: the call gave up after 5s,
		// saying it ran past 2m0s.
		return usageErr("--timeout %v: give how long the call may take, more than 0 (default 60s)", c.Timeout)
	}
	args, fromStdin, err := c.arguments(e)
	if err != nil {
		return err
	}
	o := agent.MCPCallOptions{ReadOnlyOnly: c.ReadOnly}
	switch {
	case c.Yes:
		o.Approve = func(*agent.MCPServer, *agent.MCPTool, json.RawMessage) bool { return true }
	case !fromStdin && isTerminal(e.Stdin) && isTerminal(e.Stderr):
		// (Arguments read from standard input leave nothing there to
		// answer with: the tool is refused, saying --yes approves it.)
		o.Approve = func(s *agent.MCPServer, t *agent.MCPTool, a json.RawMessage) bool {
			fmt.Fprintf(e.Stderr, "run %s of %s with %s? [y/N] ", t.Name, s.Name, a)
			line, _ := bufio.NewReader(e.Stdin).ReadString('\n')
			return strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
		}
	}
	// The call is checked (and approved) on the store opened for reading,
	// made with no store open, and recorded with the store opened for
	// writing: the writer lock, held for the whole call, kept every other
	// rook from writing (a capture, an import, the inbox's drain) while a
	// slow server answered, or an approval prompt waited, for as long as
	// --timeout allows and more.
	// A lock wait that is no duration fails every write: said before the
	// call, not once it ran and could not be recorded.
	if e.lockWaitErr != nil {
		return e.lockWaitErr
	}
	e.holdNotes = true
	defer e.releaseNotes()
	var plan *agent.MCPCallPlan
	var co mcpclient.Options
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	co, err = clientOptions(r, e, c.Timeout)
	co.Limits.WholeCall = c.Timeout // one deadline, below: its message names it
	var handshake time.Duration     // the handshake's own bound, when --timeout cut it
	if err == nil {
		handshake = handshakeBound(r, e, co, c.Timeout)
		plan, err = r.PlanMCPCall(c.Name, c.Tool, args, o)
	}
	r.Close()
	var ref *agent.MCPRefusal
	if errors.As(err, &ref) {
		// Refused by rook: recorded in the server's session (as one
		// error event, not a call), then said.
		if rerr := e.write(func(r *agent.Rook) error { return r.RecordMCPRefusal(ref, args) }); rerr != nil {
			return fmt.Errorf("%w; the refusal could not be recorded in the server's session: %v", err, rerr)
		}
	}
	if err != nil {
		return err
	}
	// One deadline for the whole call, the server's start and handshake
	// included, as --timeout's help says: the handshake's time is taken
	// from it, not added to it (Client.Call's own bound, CallTimeout,
	// started only once the handshake was over).
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	// Interrupted (Ctrl-C, SIGTERM) once it is under way, the call is
	// given up as a timeout gives it up (cancelled at the server, a
	// --command server ended) and recorded as a timed-out call is,
	// before rook exits 130 (143): ending at once, as before, left no
	// trace in the server's session of a call the server had and may
	// have run. A second interrupt ends rook at once.
	var stopped atomic.Pointer[os.Signal]
	var recorded atomic.Bool
	doneStop := onInterruptStop(func(sig os.Signal, again bool) string {
		if again {
			if recorded.Load() {
				return fmt.Sprintf("%v again: stopped at once; the call to %s of %s is recorded in the server's session", sig, c.Tool, c.Name)
			}
			return fmt.Sprintf("%v again: stopped at once, before the call to %s of %s was recorded in the server's session: if the server had the call, the tool may have run: check what it did before calling it again", sig, c.Tool, c.Name)
		}
		stopped.Store(&sig)
		cancel()
		if !e.JSON {
			fmt.Fprintf(e.Stderr, "\nrook: %v: giving up on the call to %s of %s, to record it in the server's session (%v again stops at once)\n", sig, c.Tool, c.Name, sig)
		}
		return ""
	})
	defer doneStop()
	defer func() {
		// Stopped: rook exits as interrupted, whatever came of the call
		// and its record (said by err).
		if sig := stopped.Load(); sig != nil && err != nil {
			err = &exitError{code: interruptedCode(*sig), msg: err.Error()}
		}
	}()
	var res *mcpclient.Result
	var cerr error
	withServer(ctx, func(ctx context.Context) { res, cerr = agent.RunMCPCall(ctx, plan, co) })
	cancel()
	if sig := stopped.Load(); sig != nil && cerr != nil {
		// Recorded as given up, not as the server's failure: its status
		// is left as it was.
		cerr = agent.MCPCallGivenUp(cerr, fmt.Sprintf("%v: stopped", *sig))
	}
	if cut := handshakeCut(c.Name, c.Timeout, handshake, cerr, "the tool did not run"); cut != nil {
		// Recorded as a plain error: the server's status is left as
		// it was (RecordMCPCall).
		cerr = cut
	}
	// The call is made: recording it waits for the writer lock at least
	// recordLockWait, whatever --lock-wait says. Failing at once (a
	// capture holding the lock for a moment) lost the record of a tool
	// that ran; before the call ran with no store open, such a call
	// failed before it was made.
	wait := max(e.LockWait, recordLockWait)
	var waiting func(string)
	if isTerminal(e.Stderr) {
		// What the lock is waited for: the call has run, and this
		// wait is the record's (at least recordLockWait, whatever
		// --lock-wait says), not the call's.
		ran := "ran"
		if cerr != nil {
			ran = "failed"
		}
		waiting = func(holder string) {
			if holder == "" {
				holder = "another process"
			}
			fmt.Fprintf(e.Stderr, "rook: the call to %s of %s %s; waiting for the store's writer lock, held by %s, to record it in the server's session (up to %s)\n", c.Tool, c.Name, ran, holder, wait)
		}
	}
	rec, err := e.openRookTelling(true, wait, waiting)
	if err == nil {
		err = rec.RecordMCPCall(plan, res, cerr)
		if cerr := rec.Close(); err == nil {
			err = cerr
		}
		recorded.Store(err == nil)
	}
	// Recorded (or not): an interrupt from here on ends rook at once.
	doneStop()
	if err != nil {
		if cerr == nil && res != nil {
			// The call ran: its result is what the user asked for, shown
			// even though it could not be recorded.
			if e.JSON {
				e.printJSON(res)
			} else {
				printResult(e.Stdout, res)
			}
		}
		why := err.Error()
		var le *cas.LockedError
		if errors.As(err, &le) {
			why += " (`rook doctor` shows the holder)"
		}
		if cerr != nil && !agent.MCPCallSent(cerr) {
			// The call's own failure is said too: "was made" alone
			// read as a call that ran and whose output was lost, for a
			// server that was never reached. The tool did not run:
			// the lock's advice, to run the command again, stands.
			return fmt.Errorf("the call to %s of %s failed: %v; the failure could not be recorded in the server's session either: %w", c.Tool, c.Name, cerr, err)
		}
		if cerr != nil {
			// The server had the call (it timed out, its answer was
			// lost): the tool may have run, and the lock's usual advice
			// ("run the command again") would run it again.
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("the call to %s of %s failed: %v; the failure could not be recorded in the server's session either: %s; the server had the call, so the tool may have run: running the command again may run the tool again: check what it did first", c.Tool, c.Name, cerr, why)}
		}
		// Not the lock's usual advice ("run the command again"): run
		// again, the tool runs again.
		result := "its result is above"
		switch {
		case stdoutLost(e.Stdout):
			// Neither printed nor recorded: "above" pointed at nothing.
			result = "its result was lost with the output"
		case e.JSON:
			result = "its result is on standard output"
		}
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("the call to %s of %s ran (%s), but it could not be recorded in the server's session: %s; running the command again calls the tool again", c.Tool, c.Name, result, why)}
	}
	session := plan.Session // named in a tool error's message
	if sig := stopped.Load(); sig != nil {
		if cerr != nil {
			return fmt.Errorf("%w; the call is recorded in the server's session: `rook session show %s`", serverFailed(c.Name, cerr), session)
		}
		// The call had finished when the interrupt came: its result is
		// shown, and rook still exits as interrupted, so that what ran
		// it stops too, as was asked.
		if e.JSON {
			e.printJSON(res)
		} else {
			printResult(e.Stdout, res)
		}
		return fmt.Errorf("%v: stopped, the call to %s of %s finished: its result is recorded in the server's session", *sig, c.Tool, c.Name)
	}
	if cerr != nil {
		var f *mcpclient.Failure
		if errors.As(cerr, &f) && f.Kind == mcpclient.Unreachable {
			return fmt.Errorf("%w (its setup is kept; the call is recorded in its session)", serverFailed(c.Name, cerr))
		}
		return serverFailed(c.Name, cerr)
	}
	// A tool that ran and failed exits 1 with --json too: a script must
	// not read its failure as success.
	if e.JSON {
		if err := e.printJSON(res); !res.IsError {
			return err
		}
		return &exitError{code: ExitFailure, msg: "the tool reported an error (is_error in the result)"}
	}
	printResult(e.Stdout, res)
	if res.IsError {
		return &exitError{code: ExitFailure, msg: toolErrorMessage(e, res, session)}
	}
	return nil
}

// maxArgsBytes bounds the arguments of a call read from a file or
// standard input: as much as rook reads of a server's message (Limits'
// MaxMessageBytes by default).
const maxArgsBytes = 16 << 20

// arguments reads the call's arguments, from the command line, a file
// (--args-file FILE) or standard input (--args-file -, or - for the JSON),
// and checks they are a JSON object: bad JSON is said with its line and
// column, anything else with what it is (usage errors, exit 2). fromStdin
// says they were read from standard input.
func (c *McpCallCmd) arguments(e *Env) (args json.RawMessage, fromStdin bool, err error) {
	var file string // --args-file's; nil (not given) and "" differ
	if c.ArgsFile != nil {
		if file = *c.ArgsFile; file == "" {
			// --args-file "$F", F unset: not a call with no arguments.
			return nil, false, usageErr("--args-file is empty: name a file of arguments (or - for standard input); nothing was called")
		}
		if c.Args != "" {
			return nil, false, usageErr("give the arguments on the command line or by --args-file, not both")
		}
	}
	var data []byte
	var where string
	switch {
	case c.Args == "-" || file == "-":
		e.stdinHint("the arguments (a JSON object)", "give them by --args-file FILE")
		if data, err = readArgs(e.Stdin, "standard input"); err != nil {
			return nil, true, err
		}
		where, fromStdin = "standard input", true
	case file != "":
		if err := inputGiven("--args-file", file); err != nil {
			return nil, false, err
		}
		f, err := os.Open(file)
		if err != nil {
			return nil, false, fmt.Errorf("read the arguments: %w", err)
		}
		data, err = readArgs(f, file)
		f.Close()
		if err != nil {
			return nil, false, err
		}
		where = file
	default:
		if strings.TrimSpace(c.Args) == "" {
			return json.RawMessage("{}"), false, nil // none given: {}
		}
		data, where = []byte(c.Args), "the command line's JSON"
	}
	if err := checkArgs(data, where); err != nil {
		return nil, fromStdin, usageErr("the arguments must be a JSON object, like '{\"query\":\"x\"}': %v", err)
	}
	return json.RawMessage(data), fromStdin, nil
}

// readArgs reads arguments from where (a file's name, or standard
// input), up to maxArgsBytes: more is a usage error.
func readArgs(r io.Reader, where string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxArgsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the arguments from %s: %w", where, err)
	}
	if len(data) > maxArgsBytes {
		return nil, usageErr("the arguments in %s are larger than %d bytes (16 MiB), the most rook sends in one call: nothing was called", where, maxArgsBytes)
	}
	return data, nil
}

// checkArgs says what is wrong with data as a call's arguments (where
// names where they came from): empty, not JSON (at which line and
// column), or JSON that is not an object (which kind); nil for an object.
func checkArgs(data []byte, where string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s is empty ({} for none)", where)
	}
	// Only checked, not decoded: a value Go does not hold (1e400 past a
	// float64) is still JSON, and the server reads it.
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(data)) {
			at := data[:se.Offset-1] // before the byte it stopped at
			if strings.HasPrefix(se.Error(), "unexpected end") {
				at = data // it stopped past the last byte
			}
			line := 1 + bytes.Count(at, []byte("\n"))
			col := 1 + utf8.RuneCount(at[bytes.LastIndexByte(at, '\n')+1:])
			return fmt.Errorf("%s is not valid JSON at line %d, column %d: %v", where, line, col, err)
		}
		return fmt.Errorf("%s is not valid JSON: %v", where, err)
	}
	switch bytes.TrimLeft(v, " \t\r\n")[0] {
	case '{':
		return nil
	case 'n':
		return fmt.Errorf("%s is null", where)
	case '[':
		return fmt.Errorf("%s holds a JSON array", where)
	case '"':
		return fmt.Errorf("%s holds a JSON string", where)
	case 't', 'f':
		return fmt.Errorf("%s holds a JSON boolean", where)
	}
	return fmt.Errorf("%s holds a JSON number", where)
}

// toolErrorMessage is what a call whose tool reported an error (res)
// exits with: its text is above, unless standard output lost it (a closed
// pipe, a full disk) or the tool sent none (content [], or only empty
// text): "(above)" pointed at nothing. Then it says so, and where the
// result is kept.
func toolErrorMessage(e *Env, res *mcpclient.Result, session eventlog.ID) string {
	where := "`rook session ls --all` lists the server's session"
	if !session.IsZero() {
		where = fmt.Sprintf("`rook session show %s`", session)
	}
	switch {
	case stdoutLost(e.Stdout):
		return "the tool reported an error; its text was lost with the output, and is recorded in the server's session: " + where
	case !resultShows(res):
		return "the tool reported an error and sent no text with it, nothing to say what failed; its answer is recorded in the server's session: " + where
	}
	return "the tool reported an error (above)"
}

// resultShows says whether printResult shows anything of res but blank
// lines: content other than empty text, or structured content.
func resultShows(res *mcpclient.Result) bool {
	if len(res.Structured) > 0 && string(res.Structured) != "null" {
		return true
	}
	for _, c := range res.Content {
		if c.Type != "text" || strings.TrimSpace(c.Text) != "" {
			return true
		}
	}
	return false
}

// joinNonEmpty joins the non-empty words with spaces.
func joinNonEmpty(words ...string) string {
	var out []string
	for _, w := range words {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// printResult prints a tool's result. Every string in it is the server's:
// it reaches the terminal as descriptions do, without control characters
// (the text keeps its newlines and tabs).
func printResult(w io.Writer, res *mcpclient.Result) {
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			fmt.Fprintln(w, strings.TrimRight(terminalText([]byte(c.Text)), "\n"))
		case "image", "audio":
			fmt.Fprintf(w, "[%s %s, %d bytes]\n", c.Type, terminalLine(c.MimeType), c.DataBytes)
		case "resource_link":
			fmt.Fprintf(w, "[%s]\n", joinNonEmpty(c.Type, terminalLine(c.Name), terminalLine(c.URI)))
		case "resource":
			// An embedded resource is the tool's answer itself (a file's
			// contents, as filesystem and GitHub servers return them):
			// its text is printed under a line naming it, a blob is
			// described as an image is.
			head := joinNonEmpty(c.Type, terminalLine(c.URI), terminalLine(c.MimeType))
			switch {
			case c.Text != "":
				fmt.Fprintf(w, "[%s]\n%s\n", head, strings.TrimRight(terminalText([]byte(c.Text)), "\n"))
			case c.DataBytes > 0:
				fmt.Fprintf(w, "[%s, %d bytes]\n", head, c.DataBytes)
			default:
				fmt.Fprintf(w, "[%s]\n", head)
			}
		default:
			// A type this rook does not know (a newer revision's, or
			// the server's own): what it carries is shown as an
			// embedded resource's is, its text under a line naming it.
			// (parseContent keeps its text, URI and name.)
			head := joinNonEmpty(terminalLine(c.Type), terminalLine(c.Name), terminalLine(c.URI), terminalLine(c.MimeType))
			if c.Text != "" {
				fmt.Fprintf(w, "[%s]\n%s\n", head, strings.TrimRight(terminalText([]byte(c.Text)), "\n"))
			} else {
				fmt.Fprintf(w, "[%s]\n", head)
			}
		}
	}
	if len(res.Structured) > 0 && string(res.Structured) != "null" {
		fmt.Fprintf(w, "structured content:\n%s\n", shownJSON(res.Structured))
	}
}

// shownJSON is a server's JSON as it sent it, indented for reading. Its
// values are not decoded: decoded into Go values, numbers went through
// float64, so a 64-bit id printed as another one and a number past
// float64's range (1e400, valid JSON) made the whole of it vanish. A rune
// that would act on the terminal (in JSON, only inside a string) is
// written as its \u escape, the same JSON value.
func shownJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		b.Reset()
		b.Write(raw) // not JSON after all: shown as sent, made safe below
	}
	var out strings.Builder
	for _, r := range b.String() {
		if r != '\n' && unsafeForTerminal(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}
