package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Gemini CLI's settings.json may hold comments (it reads it with them
// stripped, and keeps them when it writes): install and uninstall edit
// such a file as text, rook's entry alone added, set or taken out, every
// other byte kept; uninstall after install gives the file back as it was.
func TestMcpConfigJSONCKeepsEverythingElse(t *testing.T) {
	cases := []struct{ in, out, back string }{{
		"{\n  // my theme\n  \"ui\": {\"theme\": \"GitHub\"},\n  /* servers */\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n",
		"{\n  // my theme\n  \"ui\": {\"theme\": \"GitHub\"},\n  /* servers */\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"},\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n",
		"",
	}, {
		// An object on one line gets one more member on that line.
		"{ // settings\n  \"mcpServers\": {\"other\": {\"command\": \"x\"}}\n}",
		"{ // settings\n  \"mcpServers\": {\"other\": {\"command\": \"x\"}, \"rook\": {\"command\":\"/opt/rook/bin/rook\",\"args\":[\"mcp\",\"serve\"]}}\n}",
		"",
	}, {
		// A // comment after the last server stays on its line.
		"{\r\n\t\"mcpServers\": {\r\n\t\t\"other\": {} // other's\r\n\t}\r\n\t// end\r\n}",
		"{\r\n\t\"mcpServers\": {\r\n\t\t\"other\": {}, // other's\r\n\t\t\"rook\": {\r\n\t\t\t\"command\": \"/opt/rook/bin/rook\",\r\n\t\t\t\"args\": [\r\n\t\t\t\t\"mcp\",\r\n\t\t\t\t\"serve\"\r\n\t\t\t]\r\n\t\t}\r\n\t}\r\n\t// end\r\n}",
		"",
	}, {
		// No mcpServers yet; "//" and "/*" in strings are no comments.
		"{\n  \"url\": \"http://x/*y\", // here\n  \"n\": 1e400\n}\n",
		"{\n  \"url\": \"http://x/*y\", // here\n  \"n\": 1e400,\n  \"mcpServers\": {\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  }\n}\n",
		// An mcpServers install added stays, empty, as for every client.
		"{\n  \"url\": \"http://x/*y\", // here\n  \"n\": 1e400,\n  \"mcpServers\": {}\n}\n",
	}, {
		"// top\n{\n  \"mcpServers\": {} /* none */\n}\n",
		"// top\n{\n  \"mcpServers\": {\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  } /* none */\n}\n",
		"",
	}}
	for _, c := range cases {
		out, prev, changed, err := mcpConfigInstallJSONC([]byte(c.in), testEntry)
		if err != nil || !changed || prev != nil || string(out) != c.out {
			t.Errorf("install into\n%s\n: %v, changed %v, prev %s:\n%s\nwant\n%s", c.in, err, changed, prev, out, c.out)
			continue
		}
		if again, _, changed, err := mcpConfigInstallJSONC(out, testEntry); err != nil || changed || !bytes.Equal(again, out) {
			t.Errorf("install again: %v, changed %v", err, changed)
		}
		back, removed, err := mcpConfigUninstallJSONC(out)
		if err != nil || !sameJSON(removed, testEntry) {
			t.Errorf("uninstall: %v, removed %s", err, removed)
		}
		want := c.in
		if c.back != "" {
			want = c.back
		}
		if string(back) != want {
			t.Errorf("uninstall after install:\n%s\nwant\n%s", back, want)
		}
	}
}

// rook's own entry, when it changes, is set where it is (its members but
// command, args and env kept); uninstall takes it out with its comma, and
// a comment beside it stays.
func TestMcpConfigJSONCReplaceAndRemove(t *testing.T) {
	in := "{\"a\": 1, /* c */ \"mcpServers\": {\"rook\": {\"command\": \"/old\", \"args\": [\"mcp\", \"serve\"], \"trust\": true}, \"z\": {}}}"
	out, prev, changed, err := mcpConfigInstallJSONC([]byte(in), testEntry)
	want := "{\"a\": 1, /* c */ \"mcpServers\": {\"rook\": {\"command\":\"/opt/rook/bin/rook\",\"args\":[\"mcp\",\"serve\"],\"trust\":true}, \"z\": {}}}"
	if err != nil || !changed || string(prev) != `{"command":"/old","args":["mcp","serve"],"trust":true}` || string(out) != want {
		t.Fatalf("replace: %v %v %s\n%s", err, changed, prev, out)
	}
	back, _, err := mcpConfigUninstallJSONC(out)
	if err != nil || string(back) != "{\"a\": 1, /* c */ \"mcpServers\": {\"z\": {}}}" {
		t.Fatalf("uninstall: %v\n%s", err, back)
	}
	in = "{\n  // servers\n  \"mcpServers\": {\n    \"a\": {},\n    // rook's\n    \"rook\": {\"command\": \"r\", \"args\": [\"mcp\", \"serve\"]} // installed by rook\n  }\n}\n"
	back, removed, err := mcpConfigUninstallJSONC([]byte(in))
	if err != nil || removed == nil || string(back) != "{\n  // servers\n  \"mcpServers\": {\n    \"a\": {}\n    // rook's\n     // installed by rook\n  }\n}\n" {
		t.Fatalf("uninstall with comments about: %v\n%s", err, back)
	}
	// What Gemini CLI refuses, or rook would guess at, stays refused.
	for in, msg := range map[string]string{
		"// only a comment\n": "only comments",
		"{\"a\": 1, // c\n}":  "not valid JSON",
		"{/* c */ \"mcpServers\": {\"rook\": 1, \"rook\": 2}}":   "twice",
		"{/* c */ \"mcpServers\": {\"rook\": {\"command\": 1}}}": "not rook's",
		"{\"a\": 1 /* unterminated }":                            "not valid JSON",
	} {
		if _, _, _, err := mcpConfigInstallJSONC([]byte(in), testEntry); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("install into %q: %v, want %q", in, err, msg)
		}
	}
}

// The user has a Gemini settings.json with comments (Gemini CLI reads and
// keeps them) holding rook's entry from an earlier install, with a comment
// after it ("rook": {...} // mine), and runs `rook mcp install gemini`
// again with another rook path or store (an upgrade, --home): rook sets
// its entry where it is, only the entry's value changes (README: "leaving
// every other byte (comments, order, spacing) as it was"). The new entry
// was written with a line break after it (json.Indent keeps the trailing
// newline of the merged entry): the comment that followed it pushed to a
// line of its own, or a blank line left before the closing brace.
func TestMcpConfigJSONCReplaceKeepsWhatFollowsTheEntry(t *testing.T) {
	for _, c := range []struct{ in, want string }{{
		"{\n  \"mcpServers\": {\n    \"rook\": {\"command\": \"/old\", \"args\": [\"mcp\", \"serve\"]} // mine\n  }\n}\n",
		"{\n  \"mcpServers\": {\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    } // mine\n  }\n}\n",
	}, {
		// rook's entry first, its comma after it: the comma ends up alone
		// at the start of a line (", // mine" became "\n, // mine").
		"{\n  \"mcpServers\": {\n    \"rook\": {\"command\": \"/old\", \"args\": [\"mcp\", \"serve\"]}, // mine\n    \"b\": {}\n  }\n}\n",
		"{\n  \"mcpServers\": {\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }, // mine\n    \"b\": {}\n  }\n}\n",
	}, {
		"{\n  \"mcpServers\": {\n    \"rook\": {\"command\": \"/old\", \"args\": [\"mcp\", \"serve\"]}\n  } // servers\n}\n",
		"{\n  \"mcpServers\": {\n    \"rook\": {\n      \"command\": \"/opt/rook/bin/rook\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ]\n    }\n  } // servers\n}\n",
	}} {
		out, _, changed, err := mcpConfigInstallJSONC([]byte(c.in), testEntry)
		if err != nil || !changed || string(out) != c.want {
			t.Errorf("install again into\n%q\n: %v, changed %v:\n%q\nwant\n%q", c.in, err, changed, out, c.want)
		}
	}
}

// The user's Gemini settings.json has an empty "mcpServers" holding only
// a comment ("mcpServers": { // none yet\n  }); they run `rook mcp install
// gemini`, then `rook mcp uninstall gemini`: the file is byte for byte
// what it was (README: "uninstall after install gives the file back as
// it was"). Uninstall cut only the entry, leaving "{\n     // none
// yet\n  }": the line break install added before the entry was kept.
// FuzzMCPConfigInstallJSONC checks the same for any file.
func TestMcpConfigJSONCUninstallAfterInstallIntoEmptyServersWithComment(t *testing.T) {
	in := "{\n  \"mcpServers\": { // none yet\n  }\n}\n"
	out, _, changed, err := mcpConfigInstallJSONC([]byte(in), testEntry)
	if err != nil || !changed {
		t.Fatalf("install: %v, changed %v", err, changed)
	}
	back, removed, err := mcpConfigUninstallJSONC(out)
	if err != nil || removed == nil {
		t.Fatalf("uninstall: %v, removed %s", err, removed)
	}
	if string(back) != in {
		t.Errorf("uninstall after install gave\n%q\nwant the file as it was\n%q\n(install wrote %q)", back, in, out)
	}
}

// jsoncComments is the bytes of data's comments, in order (line breaks
// inside them left out).
func jsoncComments(data []byte) string {
	blank, _ := blankJSONComments(data)
	var out []byte
	for i := range data {
		if blank[i] != data[i] {
			out = append(out, data[i])
		}
	}
	return string(out)
}

// FuzzMCPConfigInstallJSONC: whatever a Gemini settings.json holds, install
// refuses it or writes a file that reads (comments stripped) as the strict
// install of the same file reads, with every comment kept; uninstall then
// gives the file back (an mcpServers install added left, empty), byte for
// byte when its mcpServers was there without rook's entry.
func FuzzMCPConfigInstallJSONC(f *testing.F) {
	for _, s := range jsoncSeeds() {
		f.Add(s)
	}
	entry := json.RawMessage(`{"command":"/usr/bin/rook","args":["mcp","serve"]}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		blank, comments := blankJSONComments(data)
		out, _, changed, err := mcpConfigInstallJSONC(data, entry)
		if err != nil {
			return
		}
		if !comments {
			return // FuzzMCPConfigInstall's
		}
		strict, _, schanged, serr := mcpConfigInstall(blank, entry)
		if serr != nil || schanged != changed {
			t.Fatalf("text edit: changed %v; strict install of the blanked file: %v, changed %v", changed, serr, schanged)
		}
		oblank, _ := blankJSONComments(out)
		if !sameJSON(oblank, strict) {
			t.Fatalf("install wrote\n%s\nwhich reads as\n%s\nnot as\n%s", out, oblank, strict)
		}
		if got, want := jsoncComments(out), jsoncComments(data); got != want {
			// rook's own entry, rewritten, loses a comment inside it.
			if _, prev, _, _ := mcpConfigInstall(blank, entry); prev == nil {
				t.Fatalf("comments %q, were %q", got, want)
			}
		}
		back, removed, err := mcpConfigUninstallJSONC(out)
		if err != nil || removed == nil {
			t.Fatalf("uninstall after install: %v, removed %s", err, removed)
		}
		bblank, _ := blankJSONComments(back)
		sback, _, _ := mcpConfigUninstall(strict)
		if !sameJSON(bblank, sback) {
			t.Fatalf("uninstall wrote\n%s\nnot as\n%s", back, sback)
		}
		// rook's entry was not there, its mcpServers was: uninstall
		// gives the file back byte for byte (an mcpServers holding only
		// spaces comes back as {}: install wrote the same into {} and
		// {\n}).
		if d, err := parseJSONC(data, blank); err == nil && d.at >= 0 {
			if i, _ := d.rookAt(); i < 0 {
				want := data
				srvs := d.top[d.at]
				if len(bytes.TrimSpace(data[srvs.valStart+1:srvs.valEnd-1])) == 0 {
					want = slices.Concat(data[:srvs.valStart+1], data[srvs.valEnd-1:])
				}
				if !bytes.Equal(back, want) {
					t.Fatalf("install then uninstall of\n%q\ngave\n%q\n(install wrote %q)", data, back, out)
				}
			}
		}
	})
}

func jsoncSeeds() [][]byte {
	return append(mcpConfigSeeds(),
		[]byte("{\n  // c\n  \"mcpServers\": {\n    \"other\": {} // o\n  }\n}\n"),
		[]byte("{/* a */\"mcpServers\"/* b */:/* c */{/* d */}/* e */}// f"),
		[]byte("{\"s\": \"//\\\"/*\", // x\n\"mcpServers\": {\"rook\": {\"command\": \"/old\", \"args\": [\"mcp\", \"serve\"]}}}"),
		[]byte("{\r\n\t\"mcpServers\": {\"rook\": {/* mine */\"command\": \"/old\", \"args\": [\"mcp\", \"serve\"]}, // r\r\n\t\"z\": 1}\r\n}"),
		[]byte("{\n  \"mcpServers\": { // none yet\n  }\n}\n"),
		[]byte("{\n  \"mcpServers\": { // none yet\n  /* really */ }\n}\n"),
	)
}
