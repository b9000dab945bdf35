package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/rookhq/rook/internal/asnobody"

	"github.com/rookhq/rook/internal/vfs"
)

var testEntry = json.RawMessage(`{"command":"/opt/rook/bin/rook","args":["mcp","serve"]}`)

// An install into a file with other keys and servers keeps them in their
// places, with their values exactly as written (numbers, escapes, HTML
// characters, nesting), and only re-indents.
func TestMcpConfigInstallKeepsEverythingElse(t *testing.T) {
	in := `{"theme": "dark", "n": 1.50, "big": 12345678901234567890, "s": "a\u00e9<b>&\"",
	"mcpServers": {"other": {"command": "x", "args": [], "env": {"K": "v\n"}}, "later": {"url": "http://h/?a=1&b=2"}},
	"tail": [null, true, {"k": {}}]}`
	out, prev, changed, err := mcpConfigInstall([]byte(in), testEntry)
	if err != nil || !changed || prev != nil {
		t.Fatalf("install: changed %v prev %s err %v", changed, prev, err)
	}
	want := `{
  "theme": "dark",
  "n": 1.50,
  "big": 12345678901234567890,
  "s": "a\u00e9<b>&\"",
  "mcpServers": {
    "other": {
      "command": "x",
      "args": [],
      "env": {
        "K": "v\n"
      }
    },
    "later": {
      "url": "http://h/?a=1&b=2"
    },
    "rook": {
      "command": "/opt/rook/bin/rook",
      "args": [
        "mcp",
        "serve"
      ]
    }
  },
  "tail": [
    null,
    true,
    {
      "k": {}
    }
  ]
}
`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}

	// Installing again finds it and changes nothing, whatever the spacing.
	out2, _, changed, err := mcpConfigInstall(out, json.RawMessage(`{ "args": ["mcp", "serve"], "command": "/opt/rook/bin/rook" }`))
	if err != nil || changed || string(out2) != string(out) {
		t.Fatalf("reinstall: changed %v err %v", changed, err)
	}

	// A different entry replaces ours in its place and is reported.
	other := json.RawMessage(`{"command":"/new/rook","args":["mcp","serve"]}`)
	out3, prev, changed, err := mcpConfigInstall(out, other)
	if err != nil || !changed || string(compactJSON(prev)) != string(testEntry) {
		t.Fatalf("replace: changed %v prev %s err %v", changed, prev, err)
	}
	if !strings.Contains(string(out3), `"/new/rook"`) || strings.Contains(string(out3), "/opt/rook") {
		t.Fatalf("replace wrote\n%s", out3)
	}

	// Uninstall gives back the file as it was before the install, but for
	// the indentation.
	back, removed, err := mcpConfigUninstall(out)
	if err != nil || string(compactJSON(removed)) != string(testEntry) {
		t.Fatalf("uninstall: removed %s err %v", removed, err)
	}
	if !sameJSON(back, []byte(in)) {
		t.Fatalf("uninstall left\n%s", back)
	}
	if strings.Index(string(back), `"theme"`) > strings.Index(string(back), `"tail"`) {
		t.Fatalf("uninstall reordered\n%s", back)
	}
}

func TestMcpConfigInstallNewFile(t *testing.T) {
	for _, in := range []string{"", "  \n", "{}", "{\"mcpServers\": {}}"} {
		out, _, changed, err := mcpConfigInstall([]byte(in), testEntry)
		if err != nil || !changed {
			t.Fatalf("%q: changed %v err %v", in, changed, err)
		}
		want := "{\n  \"mcpServers\": {\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n"
		if string(out) != want {
			t.Fatalf("%q: got\n%s", in, out)
		}
	}
}

// Uninstall of the only server leaves "mcpServers": {}; with nothing to
// remove it says so and writes nothing.
func TestMcpConfigUninstall(t *testing.T) {
	out, removed, err := mcpConfigUninstall([]byte(`{"a":1,"mcpServers":{"rook":{"command":"r","args":["mcp","serve"]}}}`))
	if err != nil || removed == nil || string(out) != "{\n  \"a\": 1,\n  \"mcpServers\": {}\n}\n" {
		t.Fatalf("got %q removed %s err %v", out, removed, err)
	}
	for _, in := range []string{"", "{}", `{"a":1}`, `{"mcpServers":{}}`, `{"mcpServers":{"rooky":{}}}`} {
		out, removed, err := mcpConfigUninstall([]byte(in))
		if err != nil || removed != nil || out != nil {
			t.Fatalf("%q: got %q removed %s err %v", in, out, removed, err)
		}
	}
}

// Anything rook cannot merge into without guessing is refused.
func TestMcpConfigRefused(t *testing.T) {
	for in, msg := range map[string]string{
		`not json`:                             "not valid JSON",
		`{"a": 1,}`:                            "not valid JSON",
		`{"a": 1} {"b": 2}`:                    "line 1: invalid character '{' after top-level value",
		`{"a": 1} x`:                           "after top-level value",
		`[1, 2]`:                               "not a JSON object",
		`"str"`:                                "not a JSON object",
		`null`:                                 "not a JSON object",
		"{\n  // comment\n  \"a\": 1}":         "not valid JSON: line 2: invalid character '/'",
		`{"mcpServers": []}`:                   `"mcpServers" is not a JSON object`,
		`{"mcpServers": null}`:                 `"mcpServers" is not a JSON object`,
		`{"mcpServers": "x"}`:                  `"mcpServers" is not a JSON object`,
		`{"mcpServers": {}, "mcpServers": {}}`: `has "mcpServers" twice`,
		`{"mcpServers": {"rook": {}, "rook": {"a": 1}}}`:    `has "rook" twice`,
		`{"mcpServers": {"rook": {"command": "x"}}, "a": }`: "not valid JSON",
	} {
		if _, _, _, err := mcpConfigInstall([]byte(in), testEntry); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("install %q: err %v, want %q", in, err, msg)
		}
		if in == `{"mcpServers": {}, "mcpServers": {}}` {
			continue
		}
		if _, _, err := mcpConfigUninstall([]byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("uninstall %q: err %v, want %q", in, err, msg)
		}
	}
}

// A user who trusted rook's server in Gemini CLI ("trust": true skips the
// confirmation Gemini asks for) or gave it a timeout, then runs `rook mcp
// install gemini` again, keeps those settings: rook compares and writes
// only the members it owns (command, args, env). The same command is
// already installed; another one (or another store) replaces rook's
// members in their places, the user's staying in theirs.
func TestMcpInstallAgainKeepsTheClientsOwnSettingsOnRooksEntry(t *testing.T) {
	in := `{"mcpServers": {"rook": {"command": "/opt/rook/bin/rook", "args": ["mcp", "serve"], "trust": true, "timeout": 30000}}}`
	out, prev, changed, err := mcpConfigInstall([]byte(in), testEntry)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	var cfg struct {
		McpServers map[string]map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("install wrote invalid JSON (%v):\n%s", err, out)
	}
	rook := cfg.McpServers["rook"]
	if string(rook["trust"]) != "true" || string(rook["timeout"]) != "30000" {
		t.Fatalf("installing again (changed %v, replaced %s) dropped the client's settings on rook's entry: now\n%s", changed, prev, out)
	}
	if string(rook["command"]) != `"/opt/rook/bin/rook"` {
		t.Fatalf("rook's entry does not run rook:\n%s", out)
	}
	if changed || string(out) != in {
		t.Fatalf("the same command was installed again: changed %v\n%s", changed, out)
	}

	// Another store: "env" comes in after the user's members, and "command"
	// changes in its place; back on the default store, "env" goes.
	in = `{"mcpServers": {"rook": {"trust": true, "command": "/old/rook", "args": ["--home", "/old", "mcp", "serve"], "timeout": 30000}}}`
	other := json.RawMessage(`{"command":"/opt/rook/bin/rook","args":["mcp","serve"],"env":{"ROOK_HOME":"/s"}}`)
	out, prev, changed, err = mcpConfigInstall([]byte(in), other)
	want := "{\n  \"mcpServers\": {\n    \"rook\": {\n      \"trust\": true,\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ],\n      \"timeout\": 30000,\n      \"env\": {\n        \"ROOK_HOME\": \"/s\"\n      }\n    }\n  }\n}\n"
	if err != nil || !changed || string(out) != want || !sameJSON(prev, []byte(`{"trust": true, "command": "/old/rook", "args": ["--home", "/old", "mcp", "serve"], "timeout": 30000}`)) {
		t.Fatalf("another store: changed %v prev %s err %v, wrote\n%s", changed, prev, err, out)
	}
	out, _, changed, err = mcpConfigInstall(out, testEntry)
	want = "{\n  \"mcpServers\": {\n    \"rook\": {\n      \"trust\": true,\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ],\n      \"timeout\": 30000\n    }\n  }\n}\n"
	if err != nil || !changed || string(out) != want {
		t.Fatalf("the default store again: changed %v err %v, wrote\n%s", changed, err, out)
	}
}

// The other servers' names (keys) are the user's, and are written back as
// they were written: bytes that are not UTF-8 and an unpaired surrogate
// escape included. Decoded and encoded again, they came back with U+FFFD
// ("caf\xe9" -> "caf\uFFFD", "a\ud800b" -> "a\uFFFDb"): another server
// silently renamed, by install and by uninstall alike.
func TestMcpInstallKeepsOtherServersNamesAsWritten(t *testing.T) {
	for _, key := range []string{"caf\xe9", `a\ud800b`, `\u0041`} {
		t.Run(fmt.Sprintf("install %q", key), func(t *testing.T) {
			in := `{"mcpServers": {"` + key + `": {"command": "x"}}}`
			out, _, _, err := mcpConfigInstall([]byte(in), testEntry)
			if err != nil || !bytes.Contains(out, []byte(`"`+key+`": {`)) {
				t.Fatalf("install of %q renamed the other server (err %v):\n%q", in, err, out)
			}
		})
		t.Run(fmt.Sprintf("uninstall %q", key), func(t *testing.T) {
			in := `{"mcpServers": {"` + key + `": {"command": "x"}, "rook": {"command": "r", "args": ["mcp", "serve"]}}}`
			out, removed, err := mcpConfigUninstall([]byte(in))
			if err != nil || removed == nil || !bytes.Contains(out, []byte(`"`+key+`": {`)) {
				t.Fatalf("uninstall of %q renamed the other server (removed %s, err %v):\n%q", in, removed, err, out)
			}
		})
	}
}

// 1e400 is valid JSON (RFC 8259 sets no range; Node, which Gemini CLI,
// Cursor and Claude Desktop read their files with, reads it as Infinity),
// and values are kept byte for byte anyway. It was refused as "not valid
// JSON: json: cannot unmarshal number 1e400 into Go value of type
// float64".
func TestMcpInstallTakesAConfigWithAHugeNumber(t *testing.T) {
	in := `{"maxTokens": 1e400, "mcpServers": {}}`
	out, _, _, err := mcpConfigInstall([]byte(in), testEntry)
	if err != nil {
		t.Fatalf("install refused valid JSON: %v", err)
	}
	if !bytes.Contains(out, []byte(`"maxTokens": 1e400`)) {
		t.Fatalf("install changed the number:\n%s", out)
	}
	_, removed, err := mcpConfigUninstall([]byte(`{"maxTokens": 1e400, "mcpServers": {"rook": {"command": "r", "args": ["mcp", "serve"]}}}`))
	if err != nil || removed == nil {
		t.Fatalf("uninstall: removed %s, err %v", removed, err)
	}
}

// A file saved with a UTF-8 byte order mark (Windows editors do) is
// refused saying so: the error named a character the user cannot see in
// the file, "invalid character 'ï' looking for beginning of value".
func TestMcpInstallSaysWhatIsWrongWithAByteOrderMark(t *testing.T) {
	in := "\xef\xbb\xbf{\"mcpServers\": {\"rook\": {\"command\": \"r\", \"args\": [\"mcp\", \"serve\"]}}}\n"
	const want = "the file starts with a UTF-8 byte order mark"
	if _, _, _, err := mcpConfigInstall([]byte(in), testEntry); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("install of a file starting with a BOM: %v", err)
	}
	if _, _, err := mcpConfigUninstall([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("uninstall of a file starting with a BOM: %v", err)
	}
}

// A store path, or rook's own, that is not UTF-8 (a Latin-1 directory
// name) cannot be said in a client's configuration: written with U+FFFD,
// it pointed the client at a store that does not exist (every save failing
// inbox_unavailable) while install said "installed". It is refused, for
// every client, and nothing is written.
func TestMcpInstallDoesNotPointTheClientAtAnotherStore(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("CODEX_HOME", filepath.Join(dir, "codex"))
	home := filepath.Join(dir, "caf\xe9", "store")
	for _, cmd := range []*McpInstallCmd{{Client: "cursor"}, {Client: "cursor", Print: true}, {Client: "codex"}, {Client: "claude-code"}} {
		for _, asJSON := range []bool{false, true} {
			var out, errb bytes.Buffer
			e := &Env{Stdout: &out, Stderr: &errb, FS: vfs.OS, Home: home, JSON: asJSON}
			err := cmd.Run(e)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the store's path %q (--home, $ROOK_HOME) is not UTF-8 text", home)) || !strings.Contains(err.Error(), "nothing changed") {
				t.Fatalf("%s (print %v, json %v): err %v, said %q", cmd.Client, cmd.Print, asJSON, err, out.String())
			}
			if out.Len() > 0 {
				t.Fatalf("%s (print %v, json %v): refused, and said %q", cmd.Client, cmd.Print, asJSON, out.String())
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "home", ".cursor")); !os.IsNotExist(err) {
		t.Fatalf("a refused install made the client's directory: %v", err)
	}
}

// The Rook app's MCP helper is configured under the name "rook" too (the
// seeds' docs): a "rook" entry whose args do not end in "mcp", "serve" is
// not rook's, and rook never installed it. Uninstall removed it (echoing
// it once, "was: ..."), the user's configuration of another program gone;
// it is refused now, nothing written.
func TestMcpUninstallLeavesAnotherProgramsRookEntry(t *testing.T) {
	in := `{"mcpServers": {"rook": {"command": "/Applications/Rook.app/Contents/Helpers/rook-mcp.app/Contents/MacOS/rook-mcp"}}}`
	out, removed, err := mcpConfigUninstall([]byte(in))
	var foreign *foreignEntryError
	if !errors.As(err, &foreign) || removed != nil || out != nil {
		t.Fatalf("uninstall of another program's entry: removed %s, err %v", removed, err)
	}
	if want := `"mcpServers" has an entry "rook" that is not rook's MCP server (it runs "/Applications/Rook.app/Contents/Helpers/rook-mcp.app/Contents/MacOS/rook-mcp", not rook with "mcp", "serve" as its last arguments)`; !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want %s", err, want)
	}
}

// Install does not replace another program's "rook" entry either (it did,
// saying "replaced"): it is refused, whatever the entry is, while rook's
// own, --home first or not, is taken as rook's.
func TestMcpInstallLeavesAnotherProgramsRookEntry(t *testing.T) {
	for _, rook := range []string{
		`{"command": "/Applications/Rook.app/Contents/Helpers/rook-mcp.app/Contents/MacOS/rook-mcp"}`,
		`{"command": "/opt/rook/bin/rook", "args": ["serve"]}`,
		`{"command": "/opt/rook/bin/rook", "args": ["mcp", "serve", "--x"]}`,
		`{"command": "/opt/rook/bin/rook", "args": "mcp serve"}`,
		`{"url": "https://rook.example/mcp"}`,
		`"/opt/rook/bin/rook"`,
		`{}`,
	} {
		in := `{"mcpServers": {"rook": ` + rook + `}}`
		out, prev, changed, err := mcpConfigInstall([]byte(in), testEntry)
		var foreign *foreignEntryError
		if !errors.As(err, &foreign) || out != nil || changed {
			t.Errorf("install over %s: changed %v, replaced %s, err %v", rook, changed, prev, err)
		}
	}
	in := `{"mcpServers": {"rook": {"command": "/old/rook", "args": ["--home", "/s", "mcp", "serve"]}}}`
	if _, prev, changed, err := mcpConfigInstall([]byte(in), testEntry); err != nil || !changed || prev == nil {
		t.Fatalf("install over rook's own entry: changed %v, replaced %s, err %v", changed, prev, err)
	}
}

// holds: a file with CRLF line ends, unicode escapes and unknown keys is
// merged with every other value kept as written (only the layout redone),
// and installing twice changes nothing the second time.
func TestMcpInstallTwiceKeepsCRLFFileValues(t *testing.T) {
	in := "{\r\n\t\"x\": \"caf\\u00e9 \\ud83d\\ude00\",\r\n\t\"mcpServers\": {\"o\": {\"url\": \"h\", \"unknownField\": [1.0e2]}}\r\n}\r\n"
	out, _, changed, err := mcpConfigInstall([]byte(in), testEntry)
	if err != nil || !changed {
		t.Fatalf("install: changed %v err %v", changed, err)
	}
	for _, want := range []string{`"x": "caf\u00e9 \ud83d\ude00"`, `1.0e2`, `"unknownField"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Fatalf("lost %s:\n%s", want, out)
		}
	}
	out2, _, changed, err := mcpConfigInstall(out, testEntry)
	if err != nil || changed || !bytes.Equal(out, out2) {
		t.Fatalf("second install: changed %v err %v", changed, err)
	}
}

// followLinks follows links as the kernel does: a relative target from
// the directory the link really is in. A link whose file does not exist
// yet, in a directory reached through a link (~/.gemini -> a dotfiles
// checkout), led where the target joined to the link's path as written
// leads (~/.gemini/../shared: ~/shared), and install wrote the file there.
func TestFollowLinks(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	for _, d := range []string{"home", "dotfiles/gemini", "dotfiles/shared", "dotfiles/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "dotfiles/shared/there.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"home/.gemini":                  filepath.Join(dir, "dotfiles/gemini"),
		"dotfiles/gemini/settings.json": "../shared/settings.json",
		"dotfiles/gemini/chain.json":    "settings.json",
		"dotfiles/gemini/up.json":       "../sub/../shared/up.json",
		"dotfiles/gemini/there.json":    "../shared/there.json",
		"dotfiles/sub/abs.json":         filepath.Join(dir, "home/.gemini/settings.json"),
		"dotfiles/gemini/loop.json":     "loop2.json",
		"dotfiles/gemini/loop2.json":    "loop.json",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]string{
		"home/.gemini/settings.json": "dotfiles/shared/settings.json",
		"home/.gemini/chain.json":    "dotfiles/shared/settings.json",
		"home/.gemini/up.json":       "dotfiles/shared/up.json",
		"home/.gemini/there.json":    "dotfiles/shared/there.json",
		"dotfiles/sub/abs.json":      "dotfiles/shared/settings.json",
		"home/.gemini/new/x.json":    "dotfiles/gemini/new/x.json",
		"home/plain.json":            "home/plain.json",
		"home/.gemini/loop.json":     "home/.gemini/loop.json", // a cycle: left for the read to refuse
	} {
		if got := followLinks(filepath.Join(dir, path)); got != filepath.Join(dir, want) {
			t.Errorf("%s leads to %s, want %s", path, got, filepath.Join(dir, want))
		}
	}
}

// The command lines survive a real shell word for word.
func TestShellArg(t *testing.T) {
	words := []string{"/usr/bin/rook", "plain", "", "with space", "it's", `a"b$c` + "`d`\\e", "new\nline", "*?[x]", "~", "é"}
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, shellArg(w))
	}
	out, err := exec.Command("sh", "-c", `f() { for a in "$@"; do printf '%s\0' "$a"; done; }; f `+strings.Join(quoted, " ")).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, words) {
		t.Fatalf("sh read %q as %q", strings.Join(quoted, " "), got)
	}
	if shellArg("/usr/local/bin/rook") != "/usr/local/bin/rook" {
		t.Fatalf("a plain path was quoted")
	}
}

// The Codex table is TOML that says what the command line says.
func TestCodexTOML(t *testing.T) {
	ent := mcpEntry{Command: `/odd "dir"/\rook` + "\x7f\t", Args: []string{"mcp", "serve"}, Env: map[string]string{"ROOK_HOME": "/h <&> ü"}}
	var cfg struct {
		McpServers map[string]struct {
			Command string
			Args    []string
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(ent.codexTOML(), &cfg); err != nil {
		t.Fatalf("%v in\n%s", err, ent.codexTOML())
	}
	got := cfg.McpServers["rook"]
	if got.Command != ent.Command || !reflect.DeepEqual(got.Args, []string{"--home", "/h <&> ü", "mcp", "serve"}) {
		t.Fatalf("decoded %+v from\n%s", got, ent.codexTOML())
	}
}

// Install and uninstall run as root with the user's $HOME (sudo) keep the
// owner and group of the client's file, as they keep its mode: a file
// replaced by one of root's, mode 0600, is one the user's client can no
// longer read, every MCP server in it lost to it.
func TestMcpInstallKeepsTheConfigFilesOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file owned by another user")
	}
	const uid, gid = 65534, 65534 // nobody
	for _, uninstall := range []bool{false, true} {
		home := t.TempDir()
		t.Setenv("HOME", home)
		path := filepath.Join(home, ".cursor", "mcp.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		in := `{"mcpServers": {"other": {"command": "x"}}}`
		if uninstall {
			in = `{"mcpServers": {"other": {"command": "x"}, "rook": {"command": "/opt/rook", "args": ["mcp", "serve"]}}}`
		}
		if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		e := &Env{Stdout: &out, Stderr: &errb, FS: vfs.OS, Home: filepath.Join(home, ".rook")}
		var err error
		if uninstall {
			err = (&McpUninstallCmd{Client: "cursor"}).Run(e)
		} else {
			err = (&McpInstallCmd{Client: "cursor"}).Run(e)
		}
		fi, serr := os.Stat(path)
		if serr != nil {
			t.Fatal(serr)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if err == nil && (st.Uid != uid || st.Gid != gid) {
			t.Errorf("uninstall %v: said %q and left %s owned by %d:%d (mode %v), was %d:%d: the user's client cannot read it any more",
				uninstall, out.String(), path, st.Uid, st.Gid, fi.Mode().Perm(), uid, gid)
		}
	}
}

// Gemini CLI reads its settings.json with comments allowed, and keeps
// them: install merges rook's entry into such a file, the comments kept,
// where it said "the file is not valid JSON".
func TestMcpInstallGeminiSettingsWithComments(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GEMINI_CLI_HOME", "")
	path := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	in := "{\n  // my theme, do not change\n  \"ui\": {\"theme\": \"GitHub\"},\n  /* servers */\n  \"mcpServers\": {\"other\": {\"command\": \"x\"}}\n}\n"
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: vfs.OS, Home: filepath.Join(home, ".rook")}
	err := (&McpInstallCmd{Client: "gemini"}).Run(e)
	got, _ := os.ReadFile(path)
	if err != nil {
		t.Fatalf("install into a settings.json Gemini CLI reads fine: %v", err)
	}
	for _, want := range []string{"// my theme, do not change", `"theme": "GitHub"`, `"other"`, `"rook"`} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("after install the file lacks %q:\n%s", want, got)
		}
	}
	// Uninstall gives the file back as it was.
	if err := (&McpUninstallCmd{Client: "gemini"}).Run(e); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != in {
		t.Errorf("after uninstall:\n%s\nwant\n%s", got, in)
	}
}

// ownerRefused is the OS file system as rook run by a user who may not
// give a file away sees it (root, running the tests, may).
type ownerRefused struct{ vfs.FS }

func (o ownerRefused) WriteFilesAtomic(dir string, files []vfs.NamedData, perm fs.FileMode) error {
	if files[0].Owner != nil {
		return &vfs.OwnerError{Owner: *files[0].Owner, Err: &fs.PathError{Op: "chown", Path: filepath.Join(dir, ".tmp"), Err: syscall.EPERM}}
	}
	return o.FS.WriteFilesAtomic(dir, files, perm)
}

// When the owner cannot be kept, install says so and changes nothing.
func TestMcpInstallOwnerNotKeptChangesNothing(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	path := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	in := `{"mcpServers": {"other": {"command": "x"}}}`
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: ownerRefused{vfs.OS}, Home: filepath.Join(home, ".rook")}
	err := (&McpInstallCmd{Client: "cursor"}).Run(e)
	if err == nil || !strings.Contains(err.Error(), path+": cannot give the new file the owner and group of the old one") ||
		!strings.Contains(err.Error(), "operation not permitted; nothing changed: run rook as the file's owner") {
		t.Fatalf("err %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != in || out.Len() != 0 {
		t.Fatalf("file %s, stdout %q", got, out.String())
	}
}

// The user runs `sudo rook mcp install cursor` (root, with their $HOME)
// before Cursor has ever run, so ~/.cursor/mcp.json does not exist yet:
// the directory and the file rook makes are the user's, given the owner
// and group of the directory they are made in, as an existing file keeps
// its own (README: install run as root with your $HOME leaves it yours).
// Both were root's: Cursor, running as the user, could neither read its
// MCP configuration nor create anything in its own ~/.cursor.
func TestMcpInstallAsRootNewFileIsTheUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid, gid = 65534, 65534 // nobody: the user whose $HOME it is
	for _, client := range []string{"cursor", "gemini"} {
		home := t.TempDir()
		if err := os.Chown(home, uid, gid); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HOME", home)
		t.Setenv("GEMINI_CLI_HOME", "")
		cl, err := findMcpClient(client)
		if err != nil {
			t.Fatal(err)
		}
		path, err := cl.path()
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		e := &Env{Stdout: &out, Stderr: &errb, FS: vfs.OS, Home: filepath.Join(home, ".rook")}
		if err := (&McpInstallCmd{Client: client}).Run(e); err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		for _, p := range []string{filepath.Dir(path), path} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != uid || st.Gid != gid {
				t.Errorf("%s: install as root into a home owned by %d:%d made %s owned by %d:%d (mode %v): the user's %s cannot read it", client, uid, gid, p, st.Uid, st.Gid, fi.Mode().Perm(), cl.display)
			}
		}
	}
}

// The user owns ~/.cursor/mcp.json, but its group is one they are not in
// (root: the file was copied in with sudo and given back with `sudo chown
// $USER ~/.cursor/mcp.json`, which leaves the group root; or made by a
// provisioning tool). They run `rook mcp install cursor` as themselves:
// the install goes through, the new file's group their own (a group they
// are not in they may not give it), as any editor saving the file leaves
// it. rook tried to give it the old group and refused: "cannot give the
// new file the owner and group of the old one (user 65534, group 0):
// operation not permitted; nothing changed: run rook as the file's owner
// (user 65534)", to the file's owner. Root prepares the file; the test
// runs as nobody (asnobody).
func TestMcpInstallOwnerWhoseGroupIsNotTheirs(t *testing.T) {
	const key = "ROOK_TEST_GROUP_NOT_THEIRS_HOME"
	if os.Geteuid() == 0 {
		base, err := os.MkdirTemp("", "rook-group-not-theirs-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		home := filepath.Join(base, "home")
		path := filepath.Join(home, ".cursor", "mcp.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(`{"mcpServers": {"other": {"command": "x"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			p        string
			uid, gid int
		}{{base, 0, 0}, {home, 65534, 65534}, {filepath.Dir(path), 65534, 65534}, {path, 65534, 0}} {
			if err := os.Chown(c.p, c.uid, c.gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(key, home)
		asnobody.Run(t, "^"+regexp.QuoteMeta(t.Name())+"$", []string{t.Name()})
		return
	}
	home := os.Getenv(key)
	if home == "" {
		t.Skip("needs root to make a file of the user's with the group root")
	}
	t.Setenv("HOME", home)
	path := filepath.Join(home, ".cursor", "mcp.json")
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: vfs.OS, Home: filepath.Join(home, ".rook")}
	err := (&McpInstallCmd{Client: "cursor"}).Run(e)
	b, _ := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"rook"`) {
		t.Fatalf("install cursor by the owner (uid %d) of %s (group 0): %v; the file holds %s", os.Geteuid(), path, err, b)
	}
}
