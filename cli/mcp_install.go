package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// `rook mcp install CLIENT` points an AI client at this rook's MCP server
// (`rook mcp serve`); `rook mcp uninstall CLIENT` takes it out again.
//
// Gemini CLI, Cursor and Claude Desktop keep their servers in a JSON file
// under "mcpServers": rook merges its one entry, "rook", into that file and
// leaves every other key and every other server's entry as it found them
// (values byte for byte; only the indentation is redone). Claude Code and
// Codex have their own `mcp add` commands and files rook does not edit: for
// them rook prints the command to run.

// McpInstallCmd is `rook mcp install`.
type McpInstallCmd struct {
	Client string `arg:"" help:"claude-code, codex, gemini, cursor or claude-desktop."`
	Print  bool   `help:"Print the configuration (or the command to run) instead of writing it."`
}

// McpUninstallCmd is `rook mcp uninstall`.
type McpUninstallCmd struct {
	Client string `arg:"" help:"claude-code, codex, gemini, cursor or claude-desktop."`
	Print  bool   `help:"Print what to remove (or the command to run) instead of changing anything."`
}

// mcpServerName is our entry's name in every client's configuration.
const mcpServerName = "rook"

// mcpClient is one AI client rook knows how to configure.
type mcpClient struct {
	name    string // as on the command line
	display string // as people call it
	// configPath is the client's JSON configuration for the clients whose
	// file rook edits; nil for the clients with their own `mcp add`.
	configPath func(userHome string) (string, error)
}

var mcpClients = []mcpClient{
	{name: "claude-code", display: "Claude Code"},
	{name: "codex", display: "Codex"},
	{name: "gemini", display: "Gemini CLI", configPath: func(h string) (string, error) {
		return filepath.Join(h, ".gemini", "settings.json"), nil
	}},
	{name: "cursor", display: "Cursor", configPath: func(h string) (string, error) {
		return filepath.Join(h, ".cursor", "mcp.json"), nil
	}},
	{name: "claude-desktop", display: "Claude Desktop", configPath: claudeDesktopConfig},
}

// claudeDesktopConfig is where Claude Desktop (an Electron app) keeps its
// configuration: its userData directory, "Claude" under the platform's
// application-data directory.
func claudeDesktopConfig(userHome string) (string, error) {
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(userHome, "Library", "Application Support", "Claude", "claude_desktop_config.json"), nil
	case "linux":
		// Electron takes $XDG_CONFIG_HOME when it is set, ~/.config otherwise.
		base := filepath.Join(userHome, ".config")
		if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
			base = x
		}
		return filepath.Join(base, "Claude", "claude_desktop_config.json"), nil
	}
	return "", fmt.Errorf("rook does not know where Claude Desktop keeps its configuration on %s", runtime.GOOS)
}

func findMcpClient(name string) (*mcpClient, error) {
	var names []string
	for i := range mcpClients {
		if mcpClients[i].name == name {
			return &mcpClients[i], nil
		}
		names = append(names, mcpClients[i].name)
	}
	return nil, usageErr("unknown client %q: expected one of %s", name, strings.Join(names, ", "))
}

// mcpEntry is what a client runs: the value of mcpServers.rook in the JSON
// configurations, and the command line of the `mcp add` commands.
type mcpEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// mcpServerEntry is the entry for this rook binary and this store. A client
// starts its servers with an environment of its own, so a store other than
// the default (--home, $ROOK_HOME) has to be spelled out: in "env" for the
// JSON configurations, as --home on a command line (withHomeFlag).
func (e *Env) mcpServerEntry() (mcpEntry, error) {
	// The path rook was started by, links kept: a package manager's link
	// (/opt/homebrew/bin/rook) outlives the versioned file it points at.
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		return mcpEntry{}, fmt.Errorf("cannot find the rook binary to point the client at: %w", err)
	}
	ent := mcpEntry{Command: exe, Args: []string{"mcp", "serve"}}
	// The client does not see our --home, and may not see our $ROOK_HOME.
	if u, err := os.UserHomeDir(); err != nil || e.Home != filepath.Join(u, ".rook") {
		ent.Env = map[string]string{"ROOK_HOME": e.Home}
	}
	return ent, nil
}

// withHomeFlag turns "env" into --home, for the command-line forms.
func (m mcpEntry) withHomeFlag() mcpEntry {
	h, ok := m.Env["ROOK_HOME"]
	if !ok {
		return m
	}
	return mcpEntry{Command: m.Command, Args: append([]string{"--home", h}, m.Args...)}
}

// shellLine is the entry as one POSIX shell command line.
func (m mcpEntry) shellLine() string {
	var words []string
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		words = append(words, shellArg(k+"="+m.Env[k]))
	}
	words = append(words, shellArg(m.Command))
	for _, a := range m.Args {
		words = append(words, shellArg(a))
	}
	return strings.Join(words, " ")
}

// shellArg quotes s for a POSIX shell when it needs it. Not
// agent.ShellQuote: that writes control bytes as $'\xNN', which a plain
// sh (dash) does not read, and a client may run this line with sh; here a
// line break stays inside '...', which every POSIX shell reads.
func shellArg(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jsonString is s as a JSON string, with <, > and & left as they are.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// tomlString is s as a TOML basic string: JSON's escapes (\" \\ \n \t
// \uXXXX ...) are all TOML escapes too, and TOML also wants DEL escaped.
func tomlString(s string) string {
	return strings.ReplaceAll(jsonString(s), "\x7f", `\u007f`)
}

// codexTOML is the [mcp_servers.rook] table of ~/.codex/config.toml.
func (m mcpEntry) codexTOML() string {
	m = m.withHomeFlag()
	args := make([]string, len(m.Args))
	for i, a := range m.Args {
		args[i] = tomlString(a)
	}
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n", mcpServerName, tomlString(m.Command), strings.Join(args, ", "))
}

// codexHome is where Codex keeps config.toml: $CODEX_HOME, else ~/.codex.
func codexHome() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find your home directory: %w", err)
	}
	return filepath.Join(u, ".codex"), nil
}

// mcpReport is the --json answer of install and uninstall.
type mcpReport struct {
	Client string `json:"client"`
	// Path is the configuration file: the one rook edited (or would edit),
	// or for Codex the config.toml the TOML block goes to.
	Path string `json:"path,omitempty"`
	// Action is installed, already_installed, replaced, uninstalled,
	// not_installed or print.
	Action string `json:"action"`
	// Entry is rook's server entry: the one installed (or to install), or
	// the one uninstalled.
	Entry json.RawMessage `json:"entry,omitempty"`
	// Previous is the entry an install replaced.
	Previous json.RawMessage `json:"previous,omitempty"`
	// Command is the shell command to run, for Claude Code and Codex.
	Command string `json:"command,omitempty"`
	// TOML is the config.toml alternative to Command, for Codex.
	TOML string `json:"toml,omitempty"`
}

// Run installs.
func (c *McpInstallCmd) Run(e *Env) error {
	cl, err := findMcpClient(c.Client)
	if err != nil {
		return err
	}
	ent, err := e.mcpServerEntry()
	if err != nil {
		return err
	}
	entJSON, _ := json.Marshal(ent)
	e.noteMissingStore()
	rep := mcpReport{Client: cl.name, Entry: entJSON, Action: "print"}

	switch cl.name {
	case "claude-code", "codex":
		// Their command lines say the store with --home.
		rep.Entry, _ = json.Marshal(ent.withHomeFlag())
	}
	switch cl.name {
	case "claude-code":
		rep.Command = "claude mcp add " + mcpServerName + " --scope user -- " + ent.withHomeFlag().shellLine()
		return e.printReport(rep, fmt.Sprintf("# Claude Code keeps its own configuration: run this to add rook's MCP server for every project (user scope)\n%s\n", rep.Command))
	case "codex":
		dir, err := codexHome()
		if err != nil {
			return err
		}
		rep.Path = filepath.Join(dir, "config.toml")
		rep.Command = "codex mcp add " + mcpServerName + " -- " + ent.withHomeFlag().shellLine()
		rep.TOML = ent.codexTOML()
		return e.printReport(rep, fmt.Sprintf("# Codex keeps its own configuration: run this to add rook's MCP server\n%s\n# or add this to %s:\n%s", rep.Command, rep.Path, rep.TOML))
	}

	path, err := cl.path()
	if err != nil {
		return err
	}
	rep.Path = path
	if c.Print {
		if e.JSON {
			return e.printJSON(rep)
		}
		snippet, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{mcpServerName: ent}}, "", "  ")
		fmt.Fprintf(e.Stdout, "Add this to %s (%s), merging it into \"mcpServers\" if the file has one:\n%s\n", path, cl.display, snippet)
		return nil
	}

	target, data, mode, err := e.readMcpConfig(path)
	if err != nil {
		return err
	}
	out, prev, changed, err := mcpConfigInstall(data, entJSON)
	if err != nil {
		return fmt.Errorf("%s: %v; nothing changed (fix it, or add the entry by hand: `rook mcp install %s --print`)", path, err, cl.name)
	}
	switch {
	case !changed:
		rep.Action = "already_installed"
	case prev != nil:
		rep.Action = "replaced"
		rep.Previous = compactJSON(prev)
	default:
		rep.Action = "installed"
	}
	if changed {
		if err := e.writeMcpConfig(target, out, mode); err != nil {
			return err
		}
	}
	if e.JSON {
		return e.printJSON(rep)
	}
	switch rep.Action {
	case "already_installed":
		fmt.Fprintf(e.Stdout, "rook's MCP server is already installed for %s in %s; nothing changed\n", cl.display, path)
		return nil
	case "replaced":
		fmt.Fprintf(e.Stdout, "replaced rook's MCP server for %s in %s\n  was: %s\n", cl.display, path, rep.Previous)
	default:
		fmt.Fprintf(e.Stdout, "installed rook's MCP server for %s in %s\n", cl.display, path)
	}
	fmt.Fprintf(e.Stdout, "  runs: %s\nrestart %s to load it\n", ent.shellLine(), cl.display)
	return nil
}

// Run uninstalls.
func (c *McpUninstallCmd) Run(e *Env) error {
	cl, err := findMcpClient(c.Client)
	if err != nil {
		return err
	}
	rep := mcpReport{Client: cl.name, Action: "print"}
	switch cl.name {
	case "claude-code":
		rep.Command = "claude mcp remove " + mcpServerName + " --scope user"
		return e.printReport(rep, fmt.Sprintf("# Claude Code keeps its own configuration: run this to remove rook's MCP server\n%s\n", rep.Command))
	case "codex":
		dir, err := codexHome()
		if err != nil {
			return err
		}
		rep.Path = filepath.Join(dir, "config.toml")
		rep.Command = "codex mcp remove " + mcpServerName
		return e.printReport(rep, fmt.Sprintf("# Codex keeps its own configuration: run this to remove rook's MCP server\n%s\n# or remove the [mcp_servers.%s] table from %s\n", rep.Command, mcpServerName, rep.Path))
	}

	path, err := cl.path()
	if err != nil {
		return err
	}
	rep.Path = path
	if c.Print {
		return e.printReport(rep, fmt.Sprintf("Remove %q from \"mcpServers\" in %s (%s).\n", mcpServerName, path, cl.display))
	}

	target, data, mode, err := e.readMcpConfig(path)
	if err != nil {
		return err
	}
	out, removed, err := mcpConfigUninstall(data)
	if err != nil {
		return fmt.Errorf("%s: %v; nothing changed (fix it, or take the entry out by hand: `rook mcp uninstall %s --print`)", path, err, cl.name)
	}
	if removed == nil {
		rep.Action = "not_installed"
		return e.printReport(rep, fmt.Sprintf("rook's MCP server is not installed for %s in %s; nothing changed\n", cl.display, path))
	}
	if err := e.writeMcpConfig(target, out, mode); err != nil {
		return err
	}
	rep.Action = "uninstalled"
	rep.Entry = compactJSON(removed)
	return e.printReport(rep, fmt.Sprintf("removed rook's MCP server for %s from %s\n  was: %s\nrestart %s to unload it\n", cl.display, path, rep.Entry, cl.display))
}

func (cl *mcpClient) path() (string, error) {
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find your home directory to find %s's configuration: %w", cl.display, err)
	}
	return cl.configPath(u)
}

// noteMissingStore warns when the server the client will start has no
// store to save to yet.
func (e *Env) noteMissingStore() {
	if _, err := e.FS.Stat(filepath.Join(e.Home, cas.MarkerFile)); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(e.Stderr, "rook: note: there is no rook store at %s yet: run `rook init` before a client saves a note\n", e.Home)
	}
}

// readMcpConfig reads a client's configuration file. A missing file reads
// as empty, to be created with mode 0600. A symbolic link (a dotfiles
// checkout, say) is followed, so that the write replaces the file it leads
// to and not the link.
func (e *Env) readMcpConfig(path string) (target string, data []byte, mode fs.FileMode, err error) {
	target, mode = followLinks(path), 0o600
	fi, err := e.FS.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, mode, nil
	}
	if err != nil {
		return "", nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, 0, fmt.Errorf("%s is not a regular file; nothing changed", path)
	}
	data, err = vfs.ReadFile(e.FS, target)
	if err != nil {
		return "", nil, 0, err
	}
	return target, data, fi.Mode().Perm(), nil
}

// followLinks is where path's symbolic links lead. A link to a file that
// does not exist yet leads there too (EvalSymlinks fails on it): the file
// is created at the link's target, and the link stays.
func followLinks(path string) string {
	for range 40 { // as the kernel's limit: a cycle of links ends here
		if t, err := filepath.EvalSymlinks(path); err == nil {
			return t
		}
		link, err := os.Readlink(path)
		if err != nil {
			return path // not a link: the file is missing, or unreadable
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return path
}

// writeMcpConfig replaces the file atomically, keeping its mode, and
// creates its directory (0700) when the client has never run.
func (e *Env) writeMcpConfig(path string, data []byte, mode fs.FileMode) error {
	if err := e.FS.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return e.FS.WriteFileAtomic(path, data, mode)
}

// jsonMember is one member of a JSON object, in file order.
type jsonMember struct {
	key   string
	value json.RawMessage
}

// parseJSONObject splits a JSON object into its members, in order, each
// value exactly as written. what names the object in errors.
func parseJSONObject(data []byte, what string) ([]jsonMember, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(data)) {
			return nil, fmt.Errorf("%s is not valid JSON: line %d: %v", what, 1+bytes.Count(data[:se.Offset-1], []byte("\n")), err)
		}
		return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	var ms []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
		}
		ms = append(ms, jsonMember{key: tok.(string), value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s is not valid JSON: something follows the object", what)
	}
	return ms, nil
}

// find returns the index of key's member, or -1; a key written twice is an
// error, since clients disagree on which one counts.
func findMember(ms []jsonMember, key, what string) (int, error) {
	at := -1
	for i, m := range ms {
		if m.key == key {
			if at >= 0 {
				return -1, fmt.Errorf("%s has %q twice", what, key)
			}
			at = i
		}
	}
	return at, nil
}

// encodeJSONObject writes members back as an object indented with two
// spaces, ending in a newline.
func encodeJSONObject(ms []jsonMember) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// mcpConfigServers parses a configuration file's contents: its members and
// those of its mcpServers object (at = -1 when it has none). An empty file
// counts as {}.
func mcpConfigServers(data []byte) (top []jsonMember, at int, servers []jsonMember, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, -1, nil, nil
	}
	if top, err = parseJSONObject(data, "the file"); err != nil {
		return nil, 0, nil, err
	}
	if at, err = findMember(top, "mcpServers", "the file"); err != nil || at < 0 {
		return top, at, nil, err
	}
	if servers, err = parseJSONObject(top[at].value, `"mcpServers"`); err != nil {
		return nil, 0, nil, err
	}
	return top, at, servers, nil
}

// mcpConfigInstall sets mcpServers.rook to entry in a configuration file's
// contents and returns the new contents, the entry it replaced (nil if
// none) and whether anything changed. Every other member, at both levels,
// keeps its place and its value as written.
func mcpConfigInstall(data []byte, entry json.RawMessage) (out []byte, prev json.RawMessage, changed bool, err error) {
	top, at, servers, err := mcpConfigServers(data)
	if err != nil {
		return nil, nil, false, err
	}
	i, err := findMember(servers, mcpServerName, `"mcpServers"`)
	if err != nil {
		return nil, nil, false, err
	}
	if i >= 0 {
		if sameJSON(servers[i].value, entry) {
			return data, nil, false, nil
		}
		prev = servers[i].value
		servers[i].value = entry
	} else {
		servers = append(servers, jsonMember{mcpServerName, entry})
	}
	obj, err := encodeJSONObject(servers)
	if err != nil {
		return nil, nil, false, err
	}
	if at >= 0 {
		top[at].value = obj
	} else {
		top = append(top, jsonMember{"mcpServers", obj})
	}
	out, err = encodeJSONObject(top)
	return out, prev, true, err
}

// mcpConfigUninstall removes mcpServers.rook and returns the new contents
// and the entry removed (nil, and nothing to write, when there was none).
// An mcpServers left empty stays, as {}.
func mcpConfigUninstall(data []byte) (out []byte, removed json.RawMessage, err error) {
	top, at, servers, err := mcpConfigServers(data)
	if err != nil || at < 0 {
		return nil, nil, err
	}
	i, err := findMember(servers, mcpServerName, `"mcpServers"`)
	if err != nil || i < 0 {
		return nil, nil, err
	}
	removed = servers[i].value
	servers = append(servers[:i:i], servers[i+1:]...)
	if top[at].value, err = encodeJSONObject(servers); err != nil {
		return nil, nil, err
	}
	out, err = encodeJSONObject(top)
	return out, removed, err
}

// sameJSON reports whether a and b hold the same JSON value, whatever the
// spacing and the order of object members.
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func compactJSON(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return json.RawMessage(raw)
	}
	return b.Bytes()
}

// printReport prints what a command did: the report as JSON with --json,
// else the text.
func (e *Env) printReport(rep mcpReport, text string) error {
	if e.JSON {
		return e.printJSON(rep)
	}
	_, err := fmt.Fprint(e.Stdout, text)
	return err
}
