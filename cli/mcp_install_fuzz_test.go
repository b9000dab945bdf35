package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// Seed corpora live in testdata/fuzz/<Target>/ as well as in f.Add, so a
// plain `go test` replays them. Regenerate the files with:
// ROOK_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./cli/

func mcpConfigSeeds() [][]byte {
	var out [][]byte
	for _, s := range []string{
		``,
		`{}`,
		"{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\", \"args\": [1, 2.50, null]}\n  }\n}\n",
		`{"mcpServers":{"rook":{"command":"/old/rook","args":["mcp","serve"]},"z":{}},"n":1e400}`,
		`{"mcpServers":{"rook":1,"rook":2}}`,
		`{"mcpServers":[]}`,
		`{"a":"\u00e9\ud800<>&","mcpServers":{"\u2028":true}}`,
		`[]`,
		`{"a":1} {}`,
		`{"mcpServers":{"rook":{"trust":true,"command":"/old/rook","args":["--home","/s","mcp","serve"],"env":{"ROOK_HOME":"/s"},"timeout":5}}}`,
		`{"mcpServers":{"rook":{"command":"/Applications/Rook.app/rook-mcp"}}}`,
		"{\"mcpServers\":{\"caf\xe9\":{},\"a\\ud800b\":1}}",
		"\xef\xbb\xbf{}",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzMCPConfigInstall: whatever a client's JSON config file holds, rook
// mcp install either refuses it or writes valid JSON whose mcpServers.rook
// is the entry and whose every other member, at both levels, keeps its
// value; installing again changes nothing, and uninstall takes back only
// the entry.
func FuzzMCPConfigInstall(f *testing.F) {
	for _, s := range mcpConfigSeeds() {
		f.Add(s)
	}
	entry := json.RawMessage(`{"command":"/usr/bin/rook","args":["mcp","serve"]}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		top, at, servers, err := mcpConfigServers(data)
		if err != nil {
			return
		}
		out, _, changed, err := mcpConfigInstall(data, entry)
		if err != nil {
			return // a duplicate key, mcpServers not an object...
		}
		if !json.Valid(out) {
			t.Fatalf("install wrote invalid JSON:\n%s", out)
		}
		top2, at2, servers2, err := mcpConfigServers(out)
		if err != nil || at2 < 0 {
			t.Fatalf("installed config does not read back (%v):\n%s", err, out)
		}
		i, err := findMember(servers2, mcpServerName, "")
		if err != nil || i < 0 {
			t.Fatalf("no rook entry after install (%v):\n%s", err, out)
		}
		if _, same, err := mergeRookEntry(servers2[i].value, entry); err != nil || !same {
			t.Fatalf("rook's entry after install is not the entry (%v):\n%s", err, out)
		}
		if changed {
			keeps(t, "top", top, top2, "mcpServers")
			if at >= 0 {
				keeps(t, "mcpServers", servers, servers2, mcpServerName)
				// The members of an old rook entry that rook does not write
				// are the client's or the user's: kept.
				if j, _ := findMember(servers, mcpServerName, ""); j >= 0 {
					old, _ := parseJSONObject(servers[j].value, "")
					now, _ := parseJSONObject(servers2[i].value, "")
					keeps(t, "rook's entry", old, now, rookEntryKeys...)
				}
			}
		}
		if _, _, again, err := mcpConfigInstall(out, entry); err != nil || again {
			t.Fatalf("a second install changed the file (%v)", err)
		}
		un, removed, err := mcpConfigUninstall(out)
		if err != nil || removed == nil {
			t.Fatalf("uninstall after install: %v, removed %s", err, removed)
		}
		if _, same, err := mergeRookEntry(removed, entry); err != nil || !same {
			t.Fatalf("uninstall after install removed %s, not the entry (%v)", removed, err)
		}
		top3, _, servers3, err := mcpConfigServers(un)
		if err != nil {
			t.Fatalf("uninstalled config does not read back (%v):\n%s", err, un)
		}
		keeps(t, "top", top2, top3, "mcpServers")
		keeps(t, "mcpServers", servers2, servers3, mcpServerName)
	})
}

// keeps checks every member of before but those named in skip is in
// after, in the same order, its key as written and its value the same.
func keeps(t *testing.T, what string, before, after []jsonMember, skip ...string) {
	t.Helper()
	j := 0
	for _, m := range before {
		if slices.Contains(skip, m.key) {
			continue
		}
		for j < len(after) && slices.Contains(skip, after[j].key) {
			j++
		}
		if j >= len(after) || after[j].key != m.key || !bytes.Equal(after[j].rawKey, m.rawKey) || !sameJSON(after[j].value, m.value) {
			t.Fatalf("%s member %q lost or changed", what, m.key)
		}
		j++
	}
}

func tomlSeeds() [][]byte {
	var out [][]byte
	for _, s := range []string{"/usr/local/bin/rook", `C:\Program Files\rook "x"`, "a\x7fb\x00\t\n\u2028", "\xff\xfe", "it's"} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzTOMLString: the command and arguments rook mcp install prints for
// Codex's config.toml read back as the same strings (each byte that is not
// UTF-8 as U+FFFD: mcpServerEntry refuses such a path before it gets here).
func FuzzTOMLString(f *testing.F) {
	for _, s := range tomlSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		var v struct{ X string }
		if _, err := toml.Decode("x = "+tomlString(s)+"\n", &v); err != nil {
			t.Fatalf("%q as TOML %s does not parse: %v", s, tomlString(s), err)
		}
		var want strings.Builder
		for _, r := range s {
			want.WriteRune(r)
		}
		if v.X != want.String() {
			t.Fatalf("%q reads back as %q", s, v.X)
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzMCPConfigInstall": mcpConfigSeeds(), "FuzzMCPConfigInstallJSONC": jsoncSeeds(), "FuzzTOMLString": tomlSeeds(), "FuzzCheckArgs": argsSeeds()})
}
