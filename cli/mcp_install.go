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
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// `rook mcp install CLIENT` points an AI client at this rook's MCP server
// (`rook mcp serve`); `rook mcp uninstall CLIENT` takes it out again.
//
// Gemini CLI, Cursor and Claude Desktop keep their servers in a JSON file
// under "mcpServers": rook merges its one entry, "rook", into that file and
// leaves every other key and every other server's entry as it found them
// (keys and values byte for byte; only the indentation is redone; a Gemini
// CLI file with comments is edited as text instead, every other byte kept:
// mcp_install_jsonc.go), and on
// its own entry every member but the ones it writes (rookEntryKeys). A
// "rook" entry that is not rook's it neither replaces nor removes. Claude
// Code and Codex have their own `mcp add` commands and files rook does not
// edit: for them rook prints the command to run.

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
	// jsonc: the client reads its file with comments allowed, and keeps
	// them (mcpConfigInstallJSONC).
	jsonc bool
	// homeEnv names the variable that, when set (not empty), is the home
	// the client takes its configuration from instead of the user's.
	homeEnv string
}

var mcpClients = []mcpClient{
	{name: "claude-code", display: "Claude Code"},
	{name: "codex", display: "Codex"},
	// Gemini CLI's home is $GEMINI_CLI_HOME when it is set (its
	// homedir(), packages/core/src/utils/paths.ts), the user's otherwise.
	{name: "gemini", display: "Gemini CLI", homeEnv: "GEMINI_CLI_HOME", jsonc: true, configPath: func(h string) (string, error) {
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
	exe, err := rookCommand()
	if err != nil {
		return mcpEntry{}, fmt.Errorf("cannot find the rook binary to point the client at: %w", err)
	}
	ent := mcpEntry{Command: exe, Args: []string{"mcp", "serve"}}
	// The client does not see our --home, and may not see our $ROOK_HOME.
	if u, err := os.UserHomeDir(); err != nil || e.Home != filepath.Join(u, ".rook") {
		ent.Env = map[string]string{"ROOK_HOME": e.Home}
	}
	// A client's configuration is Unicode text (JSON, TOML; Claude Code
	// and Codex keep what their `mcp add` is given as such): a path that
	// is not UTF-8 would be written with U+FFFD for its bytes, and the
	// client pointed at a program or a store that does not exist, every
	// save failing, while install said "installed".
	if !utf8.ValidString(exe) {
		return mcpEntry{}, fmt.Errorf("rook's path %q is not UTF-8 text, which a client's configuration cannot hold: the client would run a program that does not exist; run rook by a path that is UTF-8 (a link to it, say); nothing changed", exe)
	}
	if h, ok := ent.Env["ROOK_HOME"]; ok && !utf8.ValidString(h) {
		return mcpEntry{}, fmt.Errorf("the store's path %q (--home, $ROOK_HOME) is not UTF-8 text, which a client's configuration cannot hold: the client would save to a store that does not exist; give a store path that is UTF-8 (rename the directory, or link to it from one); nothing changed", h)
	}
	return ent, nil
}

// rookCommand is the path rook was started by, links kept: a package
// manager's link (Homebrew's bin/rook, a nix profile, a mise shim,
// ~/.local/bin/rook) outlives the versioned file it points at, which the
// next upgrade removes. os.Executable is no help for that on Linux, where
// it reads /proc/self/exe, every link resolved: it is the fallback, for
// when os.Args[0] does not lead to this very binary (startedBy).
func rookCommand() (string, error) {
	exe, err := os.Executable()
	if p, ok := startedBy(os.Args[0], exe); ok {
		return p, nil
	}
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	return exe, err
}

// startedBy is the absolute path arg0 (os.Args[0]) names, as the shell
// found it: arg0 itself when it holds a separator (made absolute against
// the working directory, its links kept), else the file of that name on
// $PATH (a relative entry's too). ok is false when that is no executable file, or, when exe (the
// running binary, links resolved) is known, not the same file as exe: a
// parent may start rook with any arg0, and the rook on $PATH may be
// another one.
func startedBy(arg0, exe string) (path string, ok bool) {
	switch {
	case arg0 == "":
		return "", false
	case strings.ContainsRune(arg0, '/') || strings.ContainsRune(arg0, filepath.Separator):
		path = arg0
	default:
		// A relative $PATH entry (bin, ".", an empty one) finds it
		// with exec.ErrDot: Go's refusal to run it, but the shell ran
		// it, and it is checked below to be this very binary.
		p, err := exec.LookPath(arg0)
		if err != nil && !errors.Is(err, exec.ErrDot) {
			return "", false
		}
		path = p
	}
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", false
		}
		path = joinKeepingLinks(wd, path)
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	if exe != "" {
		if xi, err := os.Stat(exe); err == nil && !os.SameFile(fi, xi) {
			return "", false
		}
	}
	return path, true
}

// joinKeepingLinks joins a relative path to the directory dir. Only "."
// elements are dropped: a ".." after a link leads from where the link
// leads, which filepath.Join, taking it lexically, would not; such a path
// is kept as it is, after dir.
func joinKeepingLinks(dir, rel string) string {
	if !slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), "..") {
		return filepath.Join(dir, rel)
	}
	return strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator) + rel
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

	target, data, kept, err := e.readMcpConfig(path)
	if err != nil {
		return err
	}
	install := mcpConfigInstall
	if cl.jsonc {
		install = mcpConfigInstallJSONC
	}
	out, prev, changed, err := install(data, entJSON)
	var foreign *foreignEntryError
	switch {
	case errors.As(err, &foreign):
		return fmt.Errorf("%s: %v; nothing changed: if rook's server should be there, rename that entry or take it out, then run this again", path, err)
	case err != nil:
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
		if err := e.writeMcpConfig(path, target, out, kept); err != nil {
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

	target, data, kept, err := e.readMcpConfig(path)
	if err != nil {
		return err
	}
	uninstall := mcpConfigUninstall
	if cl.jsonc {
		uninstall = mcpConfigUninstallJSONC
	}
	out, removed, err := uninstall(data)
	var foreign *foreignEntryError
	switch {
	case errors.As(err, &foreign):
		return fmt.Errorf("%s: %v; nothing changed: take it out of the file yourself if it should go", path, err)
	case err != nil:
		return fmt.Errorf("%s: %v; nothing changed (fix it, or take the entry out by hand: `rook mcp uninstall %s --print`)", path, err, cl.name)
	}
	if removed == nil {
		rep.Action = "not_installed"
		return e.printReport(rep, fmt.Sprintf("rook's MCP server is not installed for %s in %s; nothing changed\n", cl.display, path))
	}
	if err := e.writeMcpConfig(path, target, out, kept); err != nil {
		return err
	}
	rep.Action = "uninstalled"
	rep.Entry = compactJSON(removed)
	return e.printReport(rep, fmt.Sprintf("removed rook's MCP server for %s from %s\n  was: %s\nrestart %s to unload it\n", cl.display, path, rep.Entry, cl.display))
}

func (cl *mcpClient) path() (string, error) {
	if h := os.Getenv(cl.homeEnv); cl.homeEnv != "" && h != "" {
		h, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("cannot make $%s absolute to find %s's configuration: %w", cl.homeEnv, cl.display, err)
		}
		return cl.configPath(h)
	}
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

// mcpFileKept is what a configuration file keeps when rook replaces it:
// its mode, and its owner and group (nil where the file system has no
// owners). A new file, and the directories made for it, get the owner and
// group of the nearest directory above them when rook runs as root
// (newOwner): sudo with the user's $HOME makes them the user's.
type mcpFileKept struct {
	mode  fs.FileMode
	owner *vfs.Ownership
	new   bool
}

// newOwner is the owner and group for a file made at path, and the
// directories made for it: nil (the process's own) but when rook runs as
// root, then those of the nearest directory above it that is there.
func (e *Env) newOwner(path string) *vfs.Ownership {
	if os.Geteuid() != 0 {
		return nil
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if fi, err := e.FS.Stat(d); err == nil {
			return vfs.OwnerOf(fi)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// readMcpConfig reads a client's configuration file. A missing file reads
// as empty, to be created with mode 0600. A symbolic link (a dotfiles
// checkout, say) is followed, so that the write replaces the file it leads
// to and not the link.
func (e *Env) readMcpConfig(path string) (target string, data []byte, kept mcpFileKept, err error) {
	target, kept = followLinks(path), mcpFileKept{mode: 0o600}
	fi, err := e.FS.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		kept.owner, kept.new = e.newOwner(target), true
		return target, nil, kept, nil
	}
	if err != nil {
		return "", nil, kept, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, kept, fmt.Errorf("%s is not a regular file; nothing changed", path)
	}
	data, err = vfs.ReadFile(e.FS, target)
	if err != nil {
		return "", nil, kept, err
	}
	return target, data, mcpFileKept{mode: fi.Mode().Perm(), owner: vfs.OwnerOf(fi)}, nil
}

// followLinks is where path's symbolic links lead. A link to a file that
// does not exist yet leads there too (EvalSymlinks fails on it): the file
// is created at the link's target, and the link stays.
//
// The links are followed as the kernel follows them: one name at a time,
// a link's relative target read from the directory the link is in, as
// that directory really is. Joining the target to the link's path as
// written is not the same when that path goes through a link itself:
// ~/.gemini -> dotfiles/gemini holding settings.json -> ../shared/x.json
// leads to dotfiles/shared/x.json, not ~/shared/x.json.
func followLinks(path string) string {
	if t, err := filepath.EvalSymlinks(path); err == nil {
		return t
	}
	sep := string(filepath.Separator)
	vol := filepath.VolumeName(path)
	if !filepath.IsAbs(path) { // $HOME may be relative
		wd, err := os.Getwd()
		if err != nil {
			return path
		}
		path = wd + sep + path // not Join: it would take a ".." lexically
	}
	done := vol + sep // what is followed so far
	rest := strings.Split(path[len(vol):], sep)
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done) // done has no link left in it
			continue
		}
		next := filepath.Join(done, name)
		link, err := os.Readlink(next)
		if err != nil {
			done = next // not a link: a directory, the file, or missing
			continue
		}
		if hops++; hops > 40 { // the kernel's limit: a cycle of links ends here
			return path // and the read says so (too many levels of links)
		}
		if filepath.IsAbs(link) {
			vol = filepath.VolumeName(link)
			done, link = vol+sep, link[len(vol):]
		}
		rest = append(strings.Split(link, sep), rest...)
	}
	return done
}

// writeMcpConfig replaces the file target (where path leads) atomically,
// keeping its mode, owner and group: rook run as root with the user's
// $HOME (sudo) must not leave the user's client a configuration it cannot
// read. When the owner cannot be kept, nothing changes. It creates the
// file's directory (0700) when the client has never run, a new file and
// its directories given the owner of the directory they are made in
// (newOwner).
func (e *Env) writeMcpConfig(path, target string, data []byte, kept mcpFileKept) error {
	err := e.FS.MkdirAllOwned(filepath.Dir(target), 0o700, kept.owner)
	if err == nil {
		err = e.FS.WriteFilesAtomic(filepath.Dir(target), []vfs.NamedData{{Name: filepath.Base(target), Data: data, Owner: kept.owner}}, kept.mode)
	}
	var oe *vfs.OwnerError
	if errors.As(err, &oe) {
		what, ids := oe.Missing()
		if kept.new {
			return fmt.Errorf("%s: cannot give it the %s of the directory it is made in (%s): %v; the file is not written: run rook as that directory's owner (user %d)", path, what, ids, oe.Cause(), oe.Owner.UID)
		}
		return fmt.Errorf("%s: cannot give the new file the %s of the old one (%s): %v; nothing changed: run rook as the file's owner (user %d)", path, what, ids, oe.Cause(), oe.Owner.UID)
	}
	return err
}

// jsonMember is one member of a JSON object, in file order.
type jsonMember struct {
	key string // decoded, to find a member by
	// rawKey is the key as written, quotes and escapes included, to write
	// it back: decoding makes bytes that are not UTF-8, and an escaped
	// unpaired surrogate (\ud800), U+FFFD, which would rename another
	// server. nil for a member rook adds.
	rawKey json.RawMessage
	value  json.RawMessage
}

// parseJSONObject splits a JSON object into its members, in order, each
// key and value exactly as written. what names the object in errors.
func parseJSONObject(data []byte, what string) ([]jsonMember, error) {
	// Checked as a RawMessage, so no number is decoded: 1e400 is valid
	// JSON (RFC 8259 sets no range) that a float64 cannot hold.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
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
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
		}
		// From the end of the last value to the end of the key: the comma
		// and spaces before it, then the key as written.
		rawKey := bytes.TrimLeft(data[start:dec.InputOffset()], ", \t\r\n")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %v", what, err)
		}
		ms = append(ms, jsonMember{key: tok.(string), rawKey: rawKey, value: v})
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
		if m.rawKey != nil {
			b.Write(m.rawKey)
		} else {
			b.WriteString(jsonString(m.key))
		}
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

// utf8BOM is the byte order mark some editors put at the start of a UTF-8
// file (Notepad before Windows 10 1903, PowerShell 5.1's Set-Content
// -Encoding UTF8, "UTF-8 with BOM" in any editor).
var utf8BOM = []byte("\xef\xbb\xbf")

// mcpConfigServers parses a configuration file's contents: its members and
// those of its mcpServers object (at = -1 when it has none). An empty file
// counts as {}.
func mcpConfigServers(data []byte) (top []jsonMember, at int, servers []jsonMember, err error) {
	// A file that starts with a byte order mark is refused, saying so,
	// rather than taken: JSON does not allow one (RFC 8259, 8.1), and the
	// clients read their files with Node's JSON.parse, which refuses it,
	// so the client already cannot read the file (Gemini CLI:
	// google-gemini/gemini-cli#25675; Claude's desktop app:
	// anthropics/claude-code#81355). An install kept in such a file would
	// say "installed" and never load; one that dropped the mark would
	// change the file beyond rook's entry without a word. The user,
	// told, saves it without the mark: nothing of theirs is touched.
	if bytes.HasPrefix(data, utf8BOM) {
		return nil, 0, nil, errors.New("the file starts with a UTF-8 byte order mark (BOM: three invisible bytes, EF BB BF, that some editors write), which JSON does not allow and the clients' JSON readers refuse: save the file as UTF-8 without a BOM")
	}
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
// keeps its place and its value as written, and so does every member of
// an existing rook entry that rook does not write (rookEntryKeys). A
// "rook" entry that is not rook's (rookEntryMembers) is refused, a
// *foreignEntryError.
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
		merged, same, err := mergeRookEntry(servers[i].value, entry)
		if err != nil {
			return nil, nil, false, err
		}
		if same {
			return data, nil, false, nil
		}
		prev = servers[i].value
		servers[i].value = merged
	} else {
		servers = append(servers, jsonMember{key: mcpServerName, value: entry})
	}
	obj, err := encodeJSONObject(servers)
	if err != nil {
		return nil, nil, false, err
	}
	if at >= 0 {
		top[at].value = obj
	} else {
		top = append(top, jsonMember{key: "mcpServers", value: obj})
	}
	out, err = encodeJSONObject(top)
	return out, prev, true, err
}

// mcpConfigUninstall removes mcpServers.rook and returns the new contents
// and the entry removed (nil, and nothing to write, when there was none).
// An mcpServers left empty stays, as {}. A "rook" entry that is not
// rook's (rookEntryMembers) is refused, a *foreignEntryError.
func mcpConfigUninstall(data []byte) (out []byte, removed json.RawMessage, err error) {
	top, at, servers, err := mcpConfigServers(data)
	if err != nil || at < 0 {
		return nil, nil, err
	}
	i, err := findMember(servers, mcpServerName, `"mcpServers"`)
	if err != nil || i < 0 {
		return nil, nil, err
	}
	if _, err := rookEntryMembers(servers[i].value); err != nil {
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

// rookEntryKeys are the members of rook's entry that rook writes
// (mcpEntry). Any other is the client's or the user's (Gemini CLI's
// "trust", which skips its confirmations, or "timeout"): an install
// leaves them as they are.
var rookEntryKeys = []string{"command", "args", "env"}

// foreignEntryError is a "rook" entry in mcpServers that is not rook's:
// rook neither replaces nor removes it.
type foreignEntryError struct {
	command string // what it runs, if it says
}

func (e *foreignEntryError) Error() string {
	runs := ""
	if e.command != "" {
		runs = fmt.Sprintf("it runs %s, ", jsonString(e.command))
	}
	return fmt.Sprintf(`"mcpServers" has an entry %q that is not rook's MCP server (%snot rook with "mcp", "serve" as its last arguments): another program's, perhaps, under the same name`, mcpServerName, runs)
}

// rookEntryMembers parses an mcpServers.rook entry that is rook's: an
// object whose "args" end in "mcp", "serve", as every rook has written
// them ("env" holding the store; --home before them on the command lines
// of `claude mcp add` and `codex mcp add`). Any other is a
// *foreignEntryError: the Rook app's MCP helper, say, is configured under
// the name "rook" too, and runs with no arguments.
func rookEntryMembers(value json.RawMessage) ([]jsonMember, error) {
	ms, err := parseJSONObject(value, `"mcpServers"."rook"`)
	if err != nil {
		return nil, &foreignEntryError{}
	}
	foreign := &foreignEntryError{}
	for _, k := range rookEntryKeys {
		if _, err := findMember(ms, k, `"mcpServers"."rook"`); err != nil {
			return nil, err // a key twice: which one the client takes is anyone's guess
		}
	}
	if i, _ := findMember(ms, "command", ""); i >= 0 {
		json.Unmarshal(ms[i].value, &foreign.command)
	}
	var args []any
	if i, _ := findMember(ms, "args", ""); i < 0 || json.Unmarshal(ms[i].value, &args) != nil ||
		len(args) < 2 || args[len(args)-2] != "mcp" || args[len(args)-1] != "serve" {
		return nil, foreign
	}
	return ms, nil
}

// mergeRookEntry sets rook's members (rookEntryKeys) of an existing rook
// entry to entry's, keeping its other members and the order of all; same
// says they already were (whatever the spacing), and nothing is to be
// written.
func mergeRookEntry(old, entry json.RawMessage) (merged json.RawMessage, same bool, err error) {
	have, err := rookEntryMembers(old)
	if err != nil {
		return nil, false, err
	}
	want, err := parseJSONObject(entry, "rook's entry")
	if err != nil {
		return nil, false, err
	}
	same = true
	for _, k := range rookEntryKeys {
		h, _ := findMember(have, k, "")
		w, _ := findMember(want, k, "")
		switch {
		case h < 0 && w < 0:
		case h >= 0 && w >= 0:
			if !sameJSON(have[h].value, want[w].value) {
				have[h].value, same = want[w].value, false
			}
		case h >= 0: // "env" of another store; this one is the default
			have, same = slices.Delete(have, h, h+1), false
		default:
			have, same = append(have, want[w]), false
		}
	}
	if same {
		return old, true, nil
	}
	merged, err = encodeJSONObject(have)
	return merged, false, err
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
