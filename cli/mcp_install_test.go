package cli

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
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
	out, removed, err := mcpConfigUninstall([]byte(`{"a":1,"mcpServers":{"rook":{"command":"r"}}}`))
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
