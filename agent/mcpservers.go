package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
)

// MCP servers rook calls (issue 9). Each server is a session (tags "mcp" and
// "mcp:<name>"): every change to its setup is an event whose body is the
// server's whole state (label StateLabel), and every call is a tool-call and
// tool-result pair in the same session, so `rook session show` tells what was
// set up, synced and called, when, with what. The current state is the last
// state event.

// StateLabel labels the events that record a server's state.
const StateLabel = "rook:mcp:state:v1"

// DefaultMaxTools is how many tools of one server may be on at once: every
// tool offered competes for a model's attention.
const DefaultMaxTools = 16

// maxToolsLimit bounds what a limit may be set to.
const maxToolsLimit = 1000

// Server statuses.
const (
	MCPOK              = "ok"
	MCPOffline         = "offline" // added without connecting (--offline)
	MCPUnreachable     = "unreachable"
	MCPNeedsCredential = "needs-credential"
	MCPNeedsOAuth      = "needs-oauth"
	MCPError           = "error"
	// MCPUnreadable: the server's state does not read (the store is
	// damaged where it lies). Only listed (MCPServers), never saved.
	MCPUnreadable = "unreadable"
)

// MCPServer is one server's setup and tools.
type MCPServer struct {
	V         int            `json:"v"`
	Name      string         `json:"name"`
	Spec      mcpclient.Spec `json:"spec"`
	MaxTools  int            `json:"max_tools"`
	Added     time.Time      `json:"added"`
	LastSync  time.Time      `json:"last_sync,omitempty"`
	Status    string         `json:"status"`
	LastError string         `json:"last_error,omitempty"`
	Protocol  string         `json:"protocol,omitempty"`
	Server    string         `json:"server,omitempty"` // serverInfo name and version
	Tools     []MCPTool      `json:"tools"`
	Removed   bool           `json:"removed,omitempty"`
}

// MCPTool is one tool of a server with the user's settings for it.
type MCPTool struct {
	Name        string                `json:"name"`
	Title       string                `json:"title,omitempty"`
	Description string                `json:"description,omitempty"` // written by the server
	Schema      json.RawMessage       `json:"schema,omitempty"`
	Claims      mcpclient.Annotations `json:"claims"` // what the server says of it: hints, never trusted
	On          bool                  `json:"on"`
	ReadOnly    bool                  `json:"read_only"`
	Approval    bool                  `json:"approval"`
	Missing     bool                  `json:"missing,omitempty"` // gone at the last sync; settings kept
	// ReadOnlySet: the user set ReadOnly (rook mcp set --read-only or
	// --no-read-only), so it is the user's, not the server's claim: a sync
	// never changes it.
	ReadOnlySet bool `json:"read_only_set,omitempty"`
	// ReadOnlyLegacy: read-only in a state saved before rook recorded who
	// set it (version 1, before ReadOnlySet), so it may be the user's
	// setting as well as the claim's. It is taken as the user's: a sync
	// does not switch it off when the claim is withdrawn (it says so,
	// SyncReport.ReadOnlyKept), and `rook mcp set` ends it.
	ReadOnlyLegacy bool `json:"read_only_legacy,omitempty"`
}

// mcpStateVersion is the version of the states saved now. Version 2 is
// the first in which a read-only setting without read_only_set was made
// by the server's claim; in version 1 it may be the user's.
const mcpStateVersion = 2

// Transport says how a server is reached.
func (s *MCPServer) Transport() string {
	if s.Spec.Command != "" {
		return "stdio"
	}
	return "http"
}

// Shown is s as rook shows it: the user information and query values of
// its URL, and the values of its headers and of its program's environment,
// replaced by "xxxxx" (the saved setup keeps them, to connect). Values are hidden
// whatever their names: Authorization, X-Api-Key and GITHUB_TOKEN are the
// usual ones, but any header or variable may carry a credential.
func (s *MCPServer) Shown() *MCPServer {
	c := *s
	c.Spec.URL = mcpclient.RedactURL(s.Spec.URL)
	c.Spec.Headers = redactValues(s.Spec.Headers)
	c.Spec.Env = redactValues(s.Spec.Env)
	c.Spec.Args = RedactArgs(s.Spec.Args)
	c.LastError = s.shownError()
	return &c
}

// urlInText finds the URLs in a message: net/http's errors quote the URL
// whole (Post "https://host/mcp?api_key=V": ...).
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// shownError is the saved last error as rook shows it. Rook masks the
// message when it saves it now, but a server saved by an older rook may
// hold its URL's user information or query values, a -NAME=VALUE
// credential, or a value of its headers or environment that the program
// or the server echoed: each is Redacted here, as the setup's own are.
func (s *MCPServer) shownError() string {
	if s.LastError == "" {
		return ""
	}
	msg := urlInText.ReplaceAllStringFunc(s.LastError, mcpclient.RedactURL)
	msg = RedactText(msg)
	var values []string
	for _, m := range []map[string]string{s.Spec.Headers, s.Spec.Env} {
		values = slices.AppendSeq(values, maps.Values(m))
	}
	// The program's credential arguments, as RedactArgs masks them in
	// the setup: --token V's V too, which RedactText does not know.
	for i, a := range RedactArgs(s.Spec.Args) {
		if v := s.Spec.Args[i]; a != v {
			values = append(values, v[max(len(a)-len(Redacted), 0):])
		}
	}
	if u, err := url.Parse(s.Spec.URL); err == nil {
		if u.User != nil {
			pw, _ := u.User.Password()
			values = append(values, u.User.Username(), pw)
		}
		for _, vs := range u.Query() {
			values = append(values, vs...)
		}
	}
	return maskValues(msg, values)
}

// maskValues is msg with each line of each of values Redacted where msg
// holds it: lines of at least 4 bytes (shorter ones would mask common
// text), as the program's stderr is masked, the longest first (a value
// holding another is masked whole).
func maskValues(msg string, values []string) string {
	var secrets []string
	for _, v := range values {
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSuffix(line, "\r"); len(line) >= 4 {
				secrets = append(secrets, line)
			}
		}
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, v := range secrets {
		msg = strings.ReplaceAll(msg, v, Redacted)
	}
	return msg
}

// credentialFlag says whether a program argument is a flag (-NAME or
// --NAME, with =VALUE or without) whose name says it carries a credential,
// as CredentialName judges a header's: --api-key=V, --token V. withValue:
// the value is in the argument itself.
func credentialFlag(arg string) (name string, withValue, ok bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", false, false
	}
	name, _, withValue = strings.Cut(strings.TrimLeft(arg, "-"), "=")
	if name == "" || !CredentialName(name) {
		return "", false, false
	}
	return name, withValue, true
}

// RedactArgs is a program's arguments as rook shows them: the value of a
// flag whose name says it is a credential, --api-key=V or --api-key V, is
// Redacted (a setup saved before add refused them may hold one). nil stays
// nil.
func RedactArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := slices.Clone(args)
	for i, a := range args {
		name, withValue, ok := credentialFlag(a)
		switch {
		case ok && withValue:
			out[i] = a[:strings.Index(a, name)+len(name)] + "=" + Redacted
		case ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			out[i+1] = Redacted
		}
	}
	return out
}

// RedactArgValues is msg with each value RedactArgs masks in args (the V
// of --token V, given as its own word) Redacted, where msg quotes it: a
// parser's "unexpected argument V" of `rook mcp add --arg --api-key V`
// (or --arg=--api-key V).
// (maskValues leaves values under 4 bytes: they would mask common text.)
func RedactArgValues(msg string, args []string) string {
	// A flag's word given by = (--arg=--api-key) is the word it carries.
	args = slices.Clone(args)
	for i, a := range args {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") && strings.HasPrefix(v, "-") {
			args[i] = v
		}
	}
	var values []string
	for i, a := range RedactArgs(args) {
		if v := args[i]; a != v && !strings.HasPrefix(v, "-") {
			values = append(values, v)
		}
	}
	return maskValues(msg, values)
}

// credentialInText finds -NAME=VALUE in a message (kong's, which quotes
// the words it was given).
var credentialInText = regexp.MustCompile(`(-{1,2}([A-Za-z0-9_.-]+)=)([^\s"']+)`)

// RedactText is msg with the value of each -NAME=VALUE in it whose name
// says it is a credential Redacted: for messages rook did not build, that
// quote the command line.
func RedactText(msg string) string {
	return credentialInText.ReplaceAllStringFunc(msg, func(m string) string {
		sub := credentialInText.FindStringSubmatch(m)
		if !CredentialName(sub[2]) {
			return m
		}
		return sub[1] + Redacted
	})
}

// redactValues is m with every value Redacted (nil stays nil).
func redactValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = Redacted
	}
	return out
}

// Redacted stands for a credential rook keeps but does not show.
const Redacted = "xxxxx"

// ToolsOn counts the tools switched on (missing ones not counted).
func (s *MCPServer) ToolsOn() int {
	n := 0
	for _, t := range s.Tools {
		if t.On && !t.Missing {
			n++
		}
	}
	return n
}

// Tool finds a tool by name.
func (s *MCPServer) Tool(name string) *MCPTool {
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	return nil
}

var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ErrNoServer: no server of that name.
var ErrNoServer = errors.New("no such MCP server")

// SyncReport says what reading a server's tools changed.
type SyncReport struct {
	New      []string `json:"new"`      // arrived: switched on when the server was just added, else off
	Missing  []string `json:"missing"`  // gone: marked, settings kept
	Returned []string `json:"returned"` // back, with their settings
	LeftOff  []string `json:"left_off"` // left off (or switched off): past the limit of tools on
	// ReadOnlyOff: no longer claimed read-only, so no longer set read-only
	// (the setting was the claim; or, saved by an older rook, it may have
	// been the user's, but the server now says the tool writes).
	ReadOnlyOff []string `json:"read_only_off"`
	// ReadOnlyKept: no longer claimed read-only, but kept read-only: set
	// before rook recorded who set it (MCPTool.ReadOnlyLegacy), so taken
	// as the user's, the server not saying the tool writes.
	ReadOnlyKept []string `json:"read_only_kept"`
	// Changed: tools known before whose description, title, arguments or
	// claims the server changed: to be read again.
	Changed []string `json:"changed"`
}

func newSyncReport() SyncReport {
	return SyncReport{New: []string{}, Missing: []string{}, Returned: []string{}, LeftOff: []string{}, ReadOnlyOff: []string{}, ReadOnlyKept: []string{}, Changed: []string{}}
}

// mergeTools applies a tool list to a server's tools. When first, every tool
// is switched on (the user is looking at the list), up to the limit; later,
// new tools arrive off, settings survive, tools that disappeared are marked
// missing, and tools that return get their settings back. Read-only starts
// from the server's claim, a starting point the user may change.
func mergeTools(s *MCPServer, found []mcpclient.Tool, first bool) SyncReport {
	rep := newSyncReport()
	old := map[string]MCPTool{}
	for _, t := range s.Tools {
		old[t.Name] = t
	}
	seen := map[string]bool{}
	var tools []MCPTool
	for _, f := range found {
		seen[f.Name] = true
		t, ok := old[f.Name]
		switch {
		case !ok:
			t = MCPTool{Name: f.Name, On: first, ReadOnly: f.Annotations.ReadOnlyHint != nil && *f.Annotations.ReadOnlyHint}
			rep.New = append(rep.New, f.Name)
		case t.Missing:
			t.Missing = false
			rep.Returned = append(rep.Returned, f.Name)
		}
		if ok {
			if toolChanged(t, f) {
				rep.Changed = append(rep.Changed, f.Name)
			}
			// Read-only started from the claim: a setting that is still
			// that claim follows it when the server withdraws it (the
			// tool now writes, or the server claims nothing), or a tool
			// the server says writes would run where only reading is
			// allowed. A setting the user made (even one matching the
			// claim) is the user's and stays, and so does one saved
			// before rook recorded who set it (ReadOnlyLegacy), which
			// may be the user's, is kept and said while the server only
			// stops claiming read-only; when it says the tool writes
			// (readOnlyHint false, or destructive), it goes off as the
			// claim's would: in doubt, a tool that says it changes
			// things never runs where only reading is allowed. A claim
			// of read-only that comes later is not taken.
			if t.ReadOnly && !t.ReadOnlySet && readOnlyClaim(t.Claims) && !readOnlyClaim(f.Annotations) {
				if t.ReadOnlyLegacy && !writesClaim(f.Annotations) {
					rep.ReadOnlyKept = append(rep.ReadOnlyKept, f.Name)
				} else {
					t.ReadOnly, t.ReadOnlyLegacy = false, false
					rep.ReadOnlyOff = append(rep.ReadOnlyOff, f.Name)
				}
			}
		}
		t.Title, t.Description, t.Schema, t.Claims = f.Title, f.Description, f.InputSchema, f.Annotations
		tools = append(tools, t)
	}
	for _, t := range s.Tools {
		if !seen[t.Name] {
			if !t.Missing {
				rep.Missing = append(rep.Missing, t.Name)
			}
			t.Missing = true
			tools = append(tools, t)
		}
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	s.Tools = tools
	// Past the limit (the tools just switched on at a first look, or tools
	// that were on coming back while others were switched on), the last
	// of those by name are switched off, and named.
	cand := map[string]bool{}
	for _, n := range rep.New {
		cand[n] = first
	}
	for _, n := range rep.Returned {
		cand[n] = true
	}
	for over := s.ToolsOn() - s.MaxTools; over > 0; {
		before := over
		for i := len(s.Tools) - 1; i >= 0 && over > 0; i-- {
			if t := &s.Tools[i]; t.On && !t.Missing && cand[t.Name] {
				t.On = false
				rep.LeftOff = append([]string{t.Name}, rep.LeftOff...)
				over--
			}
		}
		if over == before {
			break // over the limit already (set before this rule): left as the user made it
		}
	}
	return rep
}

func readOnlyClaim(a mcpclient.Annotations) bool { return a.ReadOnlyHint != nil && *a.ReadOnlyHint }

// writesClaim says whether a server claims a tool changes things: not
// read-only (readOnlyHint false) or destructive.
func writesClaim(a mcpclient.Annotations) bool {
	return (a.ReadOnlyHint != nil && !*a.ReadOnlyHint) || (a.DestructiveHint != nil && *a.DestructiveHint)
}

// toolChanged says whether the server changed what it says of a tool
// known before: its title, description, arguments or claims. Compared as
// they are saved (json.Marshal escapes what a server may send raw).
func toolChanged(t MCPTool, f mcpclient.Tool) bool {
	same := func(a, b any) bool { return string(must(json.Marshal(a))) == string(must(json.Marshal(b))) }
	return t.Title != f.Title || t.Description != f.Description || !same(t.Schema, f.InputSchema) || !same(t.Claims, f.Annotations)
}

// MCPAddOptions say how to add a server.
type MCPAddOptions struct {
	Spec     mcpclient.Spec
	MaxTools int  // 0: DefaultMaxTools
	Offline  bool // save without connecting
	Client   mcpclient.Options
	// Discovery, when set, is the server's tool list read beforehand
	// (DiscoverMCP, with no store open): MCPAdd does not connect.
	Discovery *MCPToolList
}

// CredentialName says whether a header's or an environment variable's
// name marks it as carrying a credential (Authorization, Cookie, X-Api-Key,
// X-Auth-Token, GITHUB_TOKEN...), whose value must not be saved as given.
// A credential under another name is still never shown (Shown).
func CredentialName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "pass", "cookie", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// CheckMCPSpec refuses a setup MCPAdd would save with a credential in it
// as given: the setup is an event of the server's session, printed by
// `rook session show` and kept in the store as long as the session is. A
// user or password in the URL, and a query parameter, header or program
// variable whose name says it is a credential, are refused
// (BadArgumentError); they are given by the name of a variable instead
// (BearerEnv, HeaderEnv, EnvFrom), read when rook connects. It also refuses a URL the client cannot use (no
// host, a space, an unclosed [), which an offline add would save and every
// sync and call would then fail on.
// The messages name the CLI's flags.
func CheckMCPSpec(s mcpclient.Spec) error {
	if s.Dir != "" && (s.Command == "" || !filepath.IsAbs(s.Dir)) {
		return badArgument("the program's directory %q: give an absolute path, for a --command server", s.Dir)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return badArgument("--url %s: give an http:// or https:// address with a host", mcpclient.RedactURL(s.URL))
		}
		if u.User != nil {
			return badArgument("--url %s: a user or password in the address would be saved as given in the server's session; give a token by --bearer-env VAR, or any header by --header-env K=VAR (Authorization=VAR, VAR holding \"Basic ...\", for a user and password)", mcpclient.RedactURL(s.URL))
		}
		for _, k := range mcpclient.QueryNames(u.RawQuery) {
			if CredentialName(k) {
				return badArgument("--url %s: the query parameter %s would be saved as given in the server's session, and its name says it is a credential; give it in a header by --header-env K=VAR or --bearer-env VAR if the server takes one (the variable's name is saved, never its value)", mcpclient.RedactURL(s.URL), k)
			}
		}
	}
	// A program's flag is saved as given too: --api-key=V goes by the
	// program's environment instead. Only the =V form is refused: after a
	// bare --token the next word may be the program's own (a boolean
	// flag); shown, it is masked all the same (RedactArgs). The name is a
	// guess (--max-tokens=4096, --token-file=PATH say nothing secret): a
	// number is let through, and the message says how to keep a value
	// that is no secret (two words, saved as given, masked when shown).
	for _, a := range s.Args {
		name, withValue, ok := credentialFlag(a)
		if !ok || !withValue {
			continue
		}
		if _, v, _ := strings.Cut(a, "="); v != "" && strings.Trim(v, "0123456789") == "" {
			continue
		}
		return badArgument("--arg %s: its value would be saved as given in the server's session, and the flag's name (%s) says it is a credential; pass it to the program in its environment by --env-from NAME=VAR, NAME the variable the program reads (the variable's name is saved, never its value); if the value is no secret (a file's path, say), give the flag and its value as two --arg words", RedactArgs([]string{a})[0], name)
	}
	// A header net/http will not send would fail every sync and call, as
	// "unreachable"; an offline add would save it.
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if !headerName(k) {
			return badArgument("--header %q: a header's name is letters, digits and !#$%%&'*+-.^_`|~, without spaces or a colon", k)
		}
		if !mcpclient.HeaderValue(s.Headers[k]) {
			return badArgument("--header %s: its value holds a line break or another control character, which cannot be sent", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.HeaderEnv)) {
		if !headerName(k) {
			return badArgument("--header-env %q: a header's name is letters, digits and !#$%%&'*+-.^_`|~, without spaces or a colon", k)
		}
	}
	if err := checkByValue(s.Headers, s.HeaderEnv, "--header", "--header-env"); err != nil {
		return err
	}
	if err := checkHeaderCase(s.Headers, s.HeaderEnv); err != nil {
		return err
	}
	if err := checkByValue(s.Env, s.EnvFrom, "--env", "--env-from"); err != nil {
		return err
	}
	for k := range s.HeaderEnv {
		if s.BearerEnv != "" && strings.EqualFold(k, "Authorization") {
			return badArgument("--header-env %s and --bearer-env both set Authorization: give one", k)
		}
	}
	return nil
}

// headerName says whether name is an HTTP field name (RFC 9110 5.1: a
// token), one net/http sends.
func headerName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// checkHeaderCase refuses two spellings of one header: HTTP names are
// case-insensitive (X-Tenant and x-tenant are one header), so only one of
// the values would be sent, and which one the user could not tell. Exact
// repeats across the flags are checkByValue's.
func checkHeaderCase(byValue, fromEnv map[string]string) error {
	type given struct{ flag, name string }
	var all []given
	for _, k := range slices.Sorted(maps.Keys(byValue)) {
		all = append(all, given{"--header", k})
	}
	for _, k := range slices.Sorted(maps.Keys(fromEnv)) {
		all = append(all, given{"--header-env", k})
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.name != b.name && strings.EqualFold(a.name, b.name) {
				return badArgument("%s %s and %s %s name the same header (header names are case-insensitive): give it once", a.flag, a.name, b.flag, b.name)
			}
		}
	}
	return nil
}

// checkByValue checks one pair of a setup's maps: values given as they
// are (headers, a program's variables) and the same kind given by a
// variable's name. flag and envFlag are the CLI flags that fill them.
func checkByValue(byValue, fromEnv map[string]string, flag, envFlag string) error {
	for _, k := range slices.Sorted(maps.Keys(byValue)) {
		if CredentialName(k) {
			return badArgument("%s %s: its value would be saved as given in the server's session, and the name says it is a credential; give it by %s %s=VAR (the variable's name is saved, never its value)", flag, k, envFlag, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fromEnv)) {
		if fromEnv[k] == "" {
			return badArgument("%s %s=: give the name of the variable holding the value", envFlag, k)
		}
		if _, dup := byValue[k]; dup {
			return badArgument("%s %s is given twice, by %s and %s", flag, k, flag, envFlag)
		}
	}
	return nil
}

// MCPAdd adds a server: it connects and reads the tool list at once, so a
// server that cannot answer is found out now (unless offline). A setup
// that would save a credential as given is refused (CheckMCPSpec).
func (r *Rook) MCPAdd(ctx context.Context, o MCPAddOptions) (*MCPServer, SyncReport, error) {
	name := o.Spec.Name
	if err := r.CheckMCPAdd(o.Spec); err != nil {
		return nil, SyncReport{}, err
	}
	s := &MCPServer{V: mcpStateVersion, Name: name, Spec: o.Spec, MaxTools: o.MaxTools, Added: r.clock.Now().UTC(), Status: MCPOffline, Tools: []MCPTool{}}
	if s.MaxTools == 0 {
		s.MaxTools = DefaultMaxTools
	}
	if s.MaxTools < 1 || s.MaxTools > maxToolsLimit {
		return nil, SyncReport{}, badArgument("a limit of %d tools: give 1 to %d", s.MaxTools, maxToolsLimit)
	}
	rep := newSyncReport()
	if !o.Offline {
		d := o.Discovery
		if d == nil {
			var err error
			if d, err = DiscoverMCP(ctx, o.Spec, o.Client); err != nil {
				return nil, rep, AddFailed(err)
			}
		}
		s.applyDiscovery(d.info, r.clock.Now())
		rep = mergeTools(s, d.tools, true)
	}
	m, err := r.Log.Create(eventlog.Meta{Title: "MCP server " + name, Tags: []string{"mcp", "mcp:" + name}})
	if err != nil {
		return nil, rep, err
	}
	return s, rep, r.saveState(m.ID, s)
}

// AddFailed is the error of an add whose discovery failed.
func AddFailed(err error) error {
	return fmt.Errorf("%w (nothing saved; `--offline` saves the server without connecting)", err)
}

// MCPToolList is a server's whole tool list and what connecting learnt.
type MCPToolList struct {
	tools []mcpclient.Tool
	info  discoveryInfo
}

// DiscoverMCP connects and reads the whole tool list. It needs no store:
// a command reads the list with no store open, then opens it for writing
// to apply it (MCPAddOptions.Discovery, ApplyMCPSync), so that a slow
// server keeps no other rook from writing.
func DiscoverMCP(ctx context.Context, spec mcpclient.Spec, o mcpclient.Options) (*MCPToolList, error) {
	tools, info, err := mcpDiscover(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	return &MCPToolList{tools: tools, info: info}, nil
}

// CheckMCPAdd refuses, before anything is asked of the server, a setup
// MCPAdd would refuse: a bad name or setup, or a name taken. It only
// reads the store.
func (r *Rook) CheckMCPAdd(spec mcpclient.Spec) error {
	name := spec.Name
	if !serverName.MatchString(name) {
		return badArgument("server name %q: use 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if (spec.URL == "") == (spec.Command == "") {
		return errors.New("give the server's --url (streamable HTTP) or its --command (stdio), not both")
	}
	if err := CheckMCPSpec(spec); err != nil {
		return err
	}
	if _, _, err := r.mcpSession(name); err == nil {
		return fmt.Errorf("an MCP server named %q exists: `rook mcp rm %s` first, or choose another name", name, name)
	} else if !errors.Is(err, ErrNoServer) {
		return err
	}
	return nil
}

// discoveryInfo is what a successful connection learnt.
type discoveryInfo struct{ protocol, server string }

func (s *MCPServer) applyDiscovery(info discoveryInfo, now time.Time) {
	s.Status, s.LastError, s.LastSync = MCPOK, "", now.UTC()
	s.Protocol, s.Server = info.protocol, info.server
}

func must(b []byte, _ error) []byte { return b }

// mcpDiscover connects and reads the whole tool list.
func mcpDiscover(ctx context.Context, spec mcpclient.Spec, o mcpclient.Options) ([]mcpclient.Tool, discoveryInfo, error) {
	c, err := mcpclient.Connect(ctx, spec, o)
	if err != nil {
		return nil, discoveryInfo{}, err
	}
	defer c.Close()
	tools, err := c.Tools(ctx)
	if err != nil {
		return nil, discoveryInfo{}, err
	}
	name, version := c.ServerInfo()
	return tools, discoveryInfo{protocol: c.Negotiated(), server: strings.TrimSpace(name + " " + version)}, nil
}

// statusOf classifies a failure for the server's status.
func statusOf(err error) string {
	var f *mcpclient.Failure
	if errors.As(err, &f) {
		switch f.Kind {
		case mcpclient.NeedsCredential:
			return MCPNeedsCredential
		case mcpclient.NeedsOAuth:
			return MCPNeedsOAuth
		case mcpclient.Unreachable:
			return MCPUnreachable
		}
	}
	return MCPError
}

// MCPSync reads a server's tool list again. A server that cannot answer
// keeps its setup; its status says why.
func (r *Rook) MCPSync(ctx context.Context, name string, o mcpclient.Options) (*MCPServer, SyncReport, error) {
	_, s, err := r.mcpSession(name)
	if err != nil {
		return nil, SyncReport{}, err
	}
	d, derr := DiscoverMCP(ctx, s.Spec, o)
	return r.ApplyMCPSync(name, s.Spec, d, derr)
}

// ApplyMCPSync applies a discovery of a server's tools (or its failure,
// derr) to the server's state as it is now: a change made while the list
// was read (`rook mcp set`, `limit`) is kept. spec is the setup the list
// was read with: if the server was removed, or removed and added again
// with another setup meanwhile, nothing is applied.
func (r *Rook) ApplyMCPSync(name string, spec mcpclient.Spec, d *MCPToolList, derr error) (*MCPServer, SyncReport, error) {
	id, s, err := r.mcpSession(name)
	if err != nil {
		return nil, SyncReport{}, err
	}
	if a, _ := json.Marshal(s.Spec); string(a) != string(must(json.Marshal(spec))) {
		return nil, SyncReport{}, fmt.Errorf("server %s was removed and added again while its tools were read: `rook mcp sync %s` reads them again", name, name)
	}
	if derr != nil {
		s.Status, s.LastError = statusOf(derr), derr.Error()
		if err := r.saveState(id, s); err != nil {
			return s, newSyncReport(), err
		}
		return s, newSyncReport(), derr
	}
	// Added offline and never read: this is the first look, also after a
	// sync that failed (its status is then no longer offline).
	first := s.LastSync.IsZero() && len(s.Tools) == 0
	s.applyDiscovery(d.info, r.clock.Now())
	rep := mergeTools(s, d.tools, first)
	return s, rep, r.saveState(id, s)
}

// MCPToolSettings change a tool's settings; nil leaves one as it is.
type MCPToolSettings struct {
	On, ReadOnly, Approval *bool
}

// MCPSet changes one tool's settings. Switching a tool on past the
// server's limit is refused.
func (r *Rook) MCPSet(name, tool string, set MCPToolSettings) (*MCPServer, error) {
	id, s, err := r.mcpSession(name)
	if err != nil {
		return nil, err
	}
	t := s.Tool(tool)
	if t == nil && s.LastSync.IsZero() {
		return nil, errors.New(neverRead(name, tool))
	}
	if t == nil {
		return nil, fmt.Errorf("server %s has no tool %q: `rook mcp tools %s` lists them", name, tool, name)
	}
	if set.On != nil && *set.On && !t.On {
		if t.Missing {
			return nil, fmt.Errorf("tool %s of %s is missing since the last sync: it cannot be switched on until it is back (`rook mcp sync %s`)", tool, name, name)
		}
		if s.ToolsOn() >= s.MaxTools {
			return nil, fmt.Errorf("%d tools of %s are on, its limit: switch one off first, or raise the limit (`rook mcp limit %s N`)", s.ToolsOn(), name, name)
		}
	}
	if set.On != nil {
		t.On = *set.On
	}
	if set.ReadOnly != nil {
		t.ReadOnly = *set.ReadOnly
		t.ReadOnlySet = true
		t.ReadOnlyLegacy = false
	}
	if set.Approval != nil {
		t.Approval = *set.Approval
	}
	return s, r.saveState(id, s)
}

// neverRead says a server whose tools were never read (added --offline,
// not synced since) has no tool of that name yet: not as if it had none.
func neverRead(name, tool string) string {
	return fmt.Sprintf("server %s has no tool %q yet: its tools were never read (`rook mcp sync %s` reads them)", name, tool, name)
}

// MCPLimit sets how many tools of a server may be on at once. Lowering it
// below the tools now on is refused (switch some off first).
func (r *Rook) MCPLimit(name string, n int) (*MCPServer, error) {
	if n < 1 || n > maxToolsLimit {
		return nil, badArgument("a limit of %d tools: give 1 to %d", n, maxToolsLimit)
	}
	id, s, err := r.mcpSession(name)
	if err != nil {
		return nil, err
	}
	if on := s.ToolsOn(); on > n {
		return nil, fmt.Errorf("%d tools of %s are on: switch %d off before lowering the limit to %d", on, name, on-n, n)
	}
	s.MaxTools = n
	return s, r.saveState(id, s)
}

// MCPRemove removes a server. Its session stays, with its calls: the last
// state says it was removed, and the name is free again. A server whose
// state does not read (MCPStateError) is removed all the same, its session
// untagged without a last state (there is none to mark removed): it
// could be neither used, nor removed, nor added again.
//
// A server whose session's metadata does not read is not removed: its
// tags cannot be rewritten without it, and the error says what to do.
func (r *Rook) MCPRemove(name string) error {
	id, s, err := r.mcpSession(name)
	var unread *MCPStateError
	switch {
	case errors.As(err, &unread) && unread.Meta:
		return err
	case errors.As(err, &unread):
	case err != nil:
		return err
	default:
		s.Removed = true
		if err := r.saveState(id, s); err != nil {
			return err
		}
	}
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return err
	}
	m.Tags = []string{"mcp", "mcp-removed:" + name}
	return r.Log.UpdateMeta(m)
}

// MCPServers lists the servers, by name. A server whose state does not
// read, or whose session's metadata does not (mcpSessions), is listed
// all the same, by the name its session's tag (or last state) gives it,
// with status MCPUnreadable, its last error saying why and what to do
// (its other fields empty), and named in the error (*MCPStatesError)
// returned with the list: one damaged record failed the whole listing,
// the other servers unlisted.
func (r *Rook) MCPServers() ([]*MCPServer, error) {
	list, damaged, err := r.mcpSessions()
	if err != nil {
		return nil, err
	}
	var out []*MCPServer
	var unread MCPStatesError
	listed := map[string]bool{}
	for _, ts := range list {
		s, err := r.lastState(ts.ID)
		if errors.Is(err, errNoState) {
			continue // tagged by hand, not a server
		}
		if err != nil {
			se := &MCPStateError{Name: ts.Name, Session: ts.ID, Err: err}
			unread.Errs = append(unread.Errs, se)
			s = &MCPServer{Name: ts.Name, Status: MCPUnreadable, LastError: se.Error(), Tools: []MCPTool{}}
		}
		listed[ts.Name] = true
		out = append(out, s)
	}
	for _, se := range damaged {
		if listed[se.Name] {
			continue // a copy (a fork), or an old session, of a server listed
		}
		listed[se.Name] = true
		unread.Errs = append(unread.Errs, se)
		out = append(out, &MCPServer{Name: se.Name, Status: MCPUnreadable, LastError: se.Error(), Tools: []MCPTool{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(unread.Errs) > 0 {
		return out, &unread
	}
	return out, nil
}

// MCPStateError: a server's state does not read (the record holding it
// is damaged), or its session's metadata does not (Meta). It names the
// server and says what to do: what failed (Err) names the session and
// event, or the metadata file.
type MCPStateError struct {
	Name    string
	Session eventlog.ID
	Err     error
	// Meta: the session's metadata does not read. Its tags cannot be
	// rewritten, so `rook mcp rm` cannot remove the server: the file
	// fixed, or the session removed, the name is free.
	Meta bool
}

func (e *MCPStateError) Error() string {
	if e.Meta {
		return fmt.Sprintf("MCP server %s: its session's metadata does not read: %v; `rook store verify` checks the store; once the file is fixed (from a backup) the server is back, or once the session is removed, with the server's calls, `rook mcp add %s` adds it again", e.Name, e.Err, e.Name)
	}
	return fmt.Sprintf("MCP server %s: its state does not read: %v: `rook store verify` checks the store; `rook mcp rm %s` removes the server (its calls stay in its session, %s), and `rook mcp add %s` adds it again", e.Name, e.Err, e.Name, e.Session, e.Name)
}

func (e *MCPStateError) Unwrap() error { return e.Err }

// MCPStatesError lists the servers whose state does not read, which
// MCPServers lists flagged (MCPUnreadable).
type MCPStatesError struct{ Errs []*MCPStateError }

func (e *MCPStatesError) Error() string {
	names := make([]string, len(e.Errs))
	for i, se := range e.Errs {
		names[i] = se.Name
	}
	msg := fmt.Sprintf("%d MCP server(s) marked %s do not read (%s): `rook store verify` checks the store; `rook mcp rm NAME` removes a server (its calls stay in its session)", len(e.Errs), MCPUnreadable, strings.Join(names, ", "))
	for _, se := range e.Errs {
		if se.Meta {
			// mcp rm refuses it (MCPRemove): its own error says what to do.
			return msg + ", but not one whose session's metadata does not read: its own error says what to do"
		}
	}
	return msg
}

// MCPServer reads one server's state.
func (r *Rook) MCPServer(name string) (*MCPServer, eventlog.ID, error) {
	id, s, err := r.mcpSession(name)
	return s, id, err
}

// mcpSession finds a server's session and its current state.
func (r *Rook) mcpSession(name string) (eventlog.ID, *MCPServer, error) {
	// A name no server can have (MCPAdd refuses it) is input to fix, as
	// an empty session id is: `rook mcp rm "$NAME"` with NAME unset said
	// there was no server "" and exited 1, as if the store lacked it.
	if !serverName.MatchString(name) {
		return eventlog.ID{}, nil, badArgument("server name %q: no server has it: a name is 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (`rook mcp ls` lists them)", name)
	}
	list, damaged, err := r.mcpSessions()
	if err != nil {
		return eventlog.ID{}, nil, err
	}
	for _, ts := range list {
		if ts.Name != name {
			continue
		}
		s, err := r.lastState(ts.ID)
		if errors.Is(err, errNoState) {
			continue // tagged by hand, not a server
		}
		if err != nil {
			return ts.ID, nil, &MCPStateError{Name: name, Session: ts.ID, Err: err}
		}
		return ts.ID, s, nil
	}
	for _, se := range damaged {
		if se.Name == name {
			return se.Session, nil, se
		}
	}
	return eventlog.ID{}, nil, fmt.Errorf("%w %q: `rook mcp ls` lists them, `rook mcp add` adds one", ErrNoServer, name)
}

// mcpSessions lists the sessions tagged as servers' (sessionsTagged), and
// the servers whose session's metadata does not read, as errors
// (MCPStateError, Meta): such a session's tags are not known, and its
// server went unseen (`mcp ls` exited 0 without it, `mcp call` said there
// was no such server, and `mcp add` added a second). Its name is its
// last state's, read from its event log without the metadata; a log that
// holds no server's state (not a server's session), or whose last one
// says it was removed, is none (`rook session ls` and `rook store verify`
// name the session all the same).
func (r *Rook) mcpSessions() ([]taggedSession, []*MCPStateError, error) {
	list, unread, err := r.sessionsTaggedOrUnread("mcp", true)
	if err != nil {
		return nil, nil, err
	}
	var damaged []*MCPStateError
	for _, u := range unread {
		if s := r.stateWithoutMeta(u.ID); s != nil && !s.Removed && s.Name != "" {
			damaged = append(damaged, &MCPStateError{Name: s.Name, Session: u.ID, Err: u.Err, Meta: true})
		}
	}
	return list, damaged, nil
}

// stateWithoutMeta is the last server state that reads in the event log
// of a session whose metadata does not (eventlog.ReadWithoutMeta), nil
// when it holds none; the log read as far as it reads. Only a damaged
// session is read so, its log from the start: its count of events is the
// metadata's.
func (r *Rook) stateWithoutMeta(id eventlog.ID) *MCPServer {
	var last *MCPServer
	for from := uint64(0); ; {
		evs, err := r.Log.ReadWithoutMeta(id, from, 256)
		if err != nil || len(evs) == 0 {
			return last
		}
		for _, ev := range evs {
			if ev.Label != StateLabel {
				continue
			}
			var st MCPServer
			if b, err := r.Body(ev); err == nil && json.Unmarshal(b, &st) == nil {
				last = &st
			}
		}
		next := evs[len(evs)-1].Seq + 1
		if next <= from {
			return last // a log read wrong must not hold the listing
		}
		from = next
	}
}

// lastState replays a server session back to its last state event.
func (r *Rook) lastState(id eventlog.ID) (*MCPServer, error) {
	s, err := r.Log.Summary(id)
	if err != nil {
		return nil, err
	}
	for before := s.Events; before > 0; {
		evs, err := r.Log.ReadBefore(id, before, 64)
		if err != nil || len(evs) == 0 {
			return nil, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Label != StateLabel {
				continue
			}
			b, err := r.Body(evs[i])
			if err != nil {
				return nil, fmt.Errorf("MCP server state in session %s, event %d: %w", id, evs[i].Seq, err)
			}
			var st MCPServer
			if err := json.Unmarshal(b, &st); err != nil {
				return nil, fmt.Errorf("MCP server state in session %s, event %d: %w", id, evs[i].Seq, err)
			}
			if st.Tools == nil {
				st.Tools = []MCPTool{}
			}
			if st.V < mcpStateVersion {
				// Read-only without read_only_set: the claim's or the
				// user's, not recorded which (ReadOnlyLegacy).
				for i := range st.Tools {
					if t := &st.Tools[i]; t.ReadOnly && !t.ReadOnlySet {
						t.ReadOnlyLegacy = true
					}
				}
				st.V = mcpStateVersion
			}
			return &st, nil
		}
		before = evs[0].Seq
	}
	return nil, fmt.Errorf("session %s: %w", id, errNoState)
}

// errNoState: a session tagged like a server's that holds no server state.
var errNoState = errors.New("holds no MCP server state")

func (r *Rook) saveState(id eventlog.ID, s *MCPServer) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if last, err := r.lastState(id); err == nil {
		if lb, err := json.Marshal(last); err == nil && string(lb) == string(b) {
			return r.Flush() // nothing changed: no new state event
		}
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindNote, Label: StateLabel, Body: b}); err != nil {
		return err
	}
	return r.Flush()
}

// MCPCallOptions say how a call may run.
type MCPCallOptions struct {
	// ReadOnlyOnly refuses tools not set read-only (where only reading is
	// allowed).
	ReadOnlyOnly bool
	// Approve is asked before a tool set to need approval runs; nil means
	// nobody can answer: such a tool is refused.
	Approve func(s *MCPServer, t *MCPTool, args json.RawMessage) bool
	Client  mcpclient.Options
}

// ErrRefused: a call rook did not make (tool off, approval not given...).
var ErrRefused = errors.New("call refused")

// Why rook refused a call (MCPRefusal.Code).
const (
	RefusedNeverRead     = "never-read"     // the server's tools were never read
	RefusedUnknownTool   = "unknown-tool"   // the server has no such tool
	RefusedMissing       = "missing"        // the tool went missing at the last sync
	RefusedOff           = "off"            // the tool is switched off
	RefusedNotReadOnly   = "not-read-only"  // only reading is allowed, and the tool is not set read-only
	RefusedNeedsApproval = "needs-approval" // the tool asks for approval, and nobody can answer
	RefusedNotApproved   = "not-approved"   // the tool asked for approval, and it was not given
)

// MCPRefusal is a call rook refused before asking the server
// (errors.Is(err, ErrRefused)): which refusal (Code, Refused*) and why.
type MCPRefusal struct {
	Server, Tool string
	Code         string
	Reason       string
}

func (e *MCPRefusal) Error() string { return ErrRefused.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrRefused) true.
func (e *MCPRefusal) Is(target error) bool { return target == ErrRefused }

// RecordMCPRefusal records a call rook refused in the server's session:
// one error event (not a tool-call: nothing was called) labelled with the
// tool, saying which refusal ("refused"), why ("reason") and with what
// arguments, so that the session tells what was asked and not run, as
// it tells what was called. The server's status is not changed: it was
// not asked. A server removed meanwhile has no session to record it in
// (ErrNoServer).
func (r *Rook) RecordMCPRefusal(ref *MCPRefusal, args json.RawMessage) error {
	id, _, err := r.mcpSession(ref.Server)
	if err != nil {
		return err
	}
	rec := map[string]any{"server": ref.Server, "tool": ref.Tool, "refused": ref.Code, "reason": ref.Reason}
	switch {
	case len(args) == 0:
		rec["arguments"] = json.RawMessage("{}")
	case json.Valid(args):
		rec["arguments"] = args
	default:
		rec["arguments"] = string(args) // kept as given, not JSON
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// The tool's name is the caller's, not one the server gave: one
	// longer than a label holds is labelled by its first bytes (whole
	// in the body), not left unrecorded.
	if _, err := r.Append(id, Entry{Kind: eventlog.KindError, Label: capLabel(ref.Tool), Body: body}); err != nil {
		return err
	}
	return r.Flush()
}

// MCPCall calls one tool and records the call and its result (or its
// failure) as events of the server's session. It holds the store's
// writer lock for the whole call: a command calls PlanMCPCall on a
// store opened for reading, RunMCPCall with no store open, and
// RecordMCPCall on one opened for writing, so that a slow server, or an
// approval nobody answers, keeps no other rook from writing.
func (r *Rook) MCPCall(ctx context.Context, name, tool string, args json.RawMessage, o MCPCallOptions) (*mcpclient.Result, error) {
	p, err := r.PlanMCPCall(name, tool, args, o)
	var ref *MCPRefusal
	if errors.As(err, &ref) {
		if rerr := r.RecordMCPRefusal(ref, args); rerr != nil {
			return nil, fmt.Errorf("%w; the refusal could not be recorded in the server's session: %v", err, rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	res, cerr := RunMCPCall(ctx, p, o.Client)
	if err := r.RecordMCPCall(p, res, cerr); err != nil {
		return res, err
	}
	return res, cerr
}

// MCPCallPlan is a call checked against the server's settings (and
// approved, where the tool asks for approval), ready to run.
type MCPCallPlan struct {
	Session eventlog.ID // the server's, where the call is recorded
	Server  *MCPServer  // its state when the call was checked
	Tool    string
	Args    json.RawMessage
	// Made is when RunMCPCall began the call (by the clock of the rook
	// that planned it): its tool-call event carries it, not the time it
	// was recorded, after the tool finished (and any wait for the
	// writer lock), so the session tells when the call was made.
	Made time.Time

	clock clock.Clock // the planning rook's (rook's one clock)
}

// PlanMCPCall checks a call: the tool is there and on, read-only where
// only reading is allowed, the arguments an object, and approved where
// the tool needs approval. It only reads the store.
func (r *Rook) PlanMCPCall(name, tool string, args json.RawMessage, o MCPCallOptions) (*MCPCallPlan, error) {
	id, s, err := r.mcpSession(name)
	if err != nil {
		return nil, err
	}
	t := s.Tool(tool)
	refuse := func(code, format string, a ...any) error {
		return &MCPRefusal{Server: name, Tool: tool, Code: code, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case t == nil && s.LastSync.IsZero():
		return nil, refuse(RefusedNeverRead, "%s", neverRead(name, tool))
	case t == nil:
		return nil, refuse(RefusedUnknownTool, "server %s has no tool %q (`rook mcp tools %s`)", name, tool, name)
	case t.Missing:
		return nil, refuse(RefusedMissing, "tool %s of %s went missing at the last sync (`rook mcp sync %s`)", tool, name, name)
	case !t.On:
		return nil, refuse(RefusedOff, "tool %s of %s is off (`rook mcp set %s %s --on`)", tool, name, name, tool)
	case o.ReadOnlyOnly && !t.ReadOnly:
		return nil, refuse(RefusedNotReadOnly, "tool %s of %s is not set read-only, and only reading is allowed here", tool, name)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("the arguments must be a JSON object, like '{\"query\":\"x\"}': %s", strings.TrimSpace(string(args)))
	}
	if t.Approval && (o.Approve == nil || !o.Approve(s, t, args)) {
		if o.Approve == nil {
			return nil, refuse(RefusedNeedsApproval, "tool %s of %s needs approval and nobody can answer here (`--yes` approves it)", tool, name)
		}
		return nil, refuse(RefusedNotApproved, "tool %s of %s was not approved", tool, name)
	}
	return &MCPCallPlan{Session: id, Server: s, Tool: tool, Args: args, clock: r.clock}, nil
}

// RunMCPCall makes a planned call, and sets when it was made (p.Made). It
// needs no store.
func RunMCPCall(ctx context.Context, p *MCPCallPlan, o mcpclient.Options) (*mcpclient.Result, error) {
	if p.clock != nil {
		p.Made = p.clock.Now()
	}
	return mcpCallOnce(ctx, p.Server.Spec, p.Tool, p.Args, o)
}

// RecordMCPCall records a call made and its result (or its failure,
// cerr) as events of the server's session, and the server's status as
// the call found it: a failure to reach it or to be let in changes it; a
// tool's own error (a JSON-RPC error, an isError result, a timeout) says
// nothing about the server, but shows it was reached: a server marked
// unreachable or refusing the credential is ok again. The status goes on
// the server's state as it is now, not as it was when the call was
// planned: a change made meanwhile (`rook mcp set`, `limit`) is kept.
func (r *Rook) RecordMCPCall(p *MCPCallPlan, res *mcpclient.Result, cerr error) error {
	name, tool := p.Server.Name, p.Tool
	callBody, _ := json.Marshal(map[string]any{"server": name, "tool": tool, "arguments": p.Args})
	var resBody []byte
	kind := eventlog.KindToolResult
	if cerr != nil {
		kind = eventlog.KindError
		resBody, _ = json.Marshal(map[string]any{"server": name, "tool": tool, "error": cerr.Error(), "status": statusOf(cerr)})
	} else {
		resBody, _ = json.Marshal(res)
	}
	// The tool's name is the server's, and a server may give one longer
	// than a label holds: labelled by its first bytes (whole in the
	// bodies), as a refused call is, not left unrecorded once it ran.
	// The call is stamped when it was made (zero, not run: now), its
	// result or failure now.
	label := capLabel(tool)
	if _, err := r.Append(p.Session, Entry{Kind: eventlog.KindToolCall, Label: label, Body: callBody, Time: p.Made}, Entry{Kind: kind, Label: label, Body: resBody}); err != nil {
		return err
	}
	s, err := r.lastState(p.Session)
	if err != nil {
		return &MCPStateError{Name: name, Session: p.Session, Err: err}
	}
	status, lastErr := s.Status, s.LastError
	switch st := statusOf(cerr); {
	case s.Removed:
		// removed while the call ran: its last state says so, and stays
	case cerr == nil:
		status, lastErr = MCPOK, ""
	case st == MCPUnreachable || st == MCPNeedsCredential || st == MCPNeedsOAuth:
		status, lastErr = st, cerr.Error()
	case mcpHandshakeDone(cerr) && (s.Status == MCPUnreachable || s.Status == MCPNeedsCredential || s.Status == MCPNeedsOAuth):
		// The server answered the handshake, with the credential it
		// was given, and the call failed on its own (the tool's
		// error, its time ran out): it is reachable, and let in.
		status, lastErr = MCPOK, ""
	}
	if status != s.Status || lastErr != s.LastError {
		s.Status, s.LastError = status, lastErr
		return r.saveState(p.Session, s)
	}
	return r.Flush()
}

func mcpCallOnce(ctx context.Context, spec mcpclient.Spec, tool string, args json.RawMessage, o mcpclient.Options) (*mcpclient.Result, error) {
	c, err := mcpclient.Connect(ctx, spec, o)
	if err != nil {
		return nil, err // the server not reached: no call made
	}
	defer c.Close()
	res, err := c.Call(ctx, tool, args)
	if err != nil {
		return nil, &callMadeError{err: err, sent: !mcpclient.NotSent(err)}
	}
	return res, nil
}

// callMadeError is a call's failure that came once the server had been
// reached (it answered the handshake) and tools/call was being sent.
// sent: the server was sent the call whole, and may have run the tool (a
// call that timed out, an answer lost, an error it answered with); not
// when its time ran out, or rook gave it up, before it was written whole
// (mcpclient.NotSent): the tool did not run.
type callMadeError struct {
	err  error
	sent bool
}

func (e *callMadeError) Error() string { return e.err.Error() }
func (e *callMadeError) Unwrap() error { return e.err }

// MCPCallGivenUp is the failure of a call rook gave up on itself (an
// interrupt: why says which, "interrupt: stopped"), made of err, the
// failure the cancelled call returned: said as what it means for the
// tool, which may have run once the server had the call, and telling
// nothing of the server, which did not fail (RecordMCPCall leaves its
// status as it was, as for a handshake --timeout cut short). Whether the
// call was sent (MCPCallSent) is kept. A call given up while it was
// written to the server (a large one, a program not reading) was not
// sent: the call's own failure says so, and what became of the program.
func MCPCallGivenUp(err error, why string) error {
	var c *callMadeError
	if !errors.As(err, &c) {
		return fmt.Errorf("%s: rook gave up on the call before it was sent: the tool did not run", why)
	}
	if !c.sent {
		return &callMadeError{err: fmt.Errorf("%s: %w", why, c.err)}
	}
	return &callMadeError{err: fmt.Errorf("%s: rook gave up on the call before the server answered; the server had the call, so the tool may have run: check what it did before calling it again", why), sent: true}
}

// MCPCallSent says whether err, a failure RunMCPCall gave, came after
// the server was sent the call, so that the tool may have run and running
// the call again may run it twice; not when the server was never reached
// (nor the handshake done), nor when the call was not written whole:
// the tool did not run.
func MCPCallSent(err error) bool {
	var c *callMadeError
	return errors.As(err, &c) && c.sent
}

// mcpHandshakeDone says whether err, a failure RunMCPCall gave, came once
// the server had answered the handshake, sent the call or not.
func mcpHandshakeDone(err error) bool {
	var c *callMadeError
	return errors.As(err, &c)
}
