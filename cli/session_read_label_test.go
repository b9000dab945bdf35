package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --json of the commands that print an event's label (history, show,
// find, entry, quote, search) lost the bytes of one that are not UTF-8
// (README: "An event's label ... is up to 1 KiB of any bytes"):
// encoding/json writes each as U+FFFD, so the events labelled $'a\xffb' and
// $'a\xfeb' both read "label": "a\ufffdb", which no script can tell apart
// or give back, where bodies keep theirs (body_base64, data_base64). Such
// a label now also comes as "label_base64", its bytes exactly (jsonLabel,
// one helper for every command); a UTF-8 label has none.
func TestJSONKeepsLabelBytes(t *testing.T) {
	t.Chdir(t.TempDir())
	home := bigObjectsHome(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(append([]string{"--home", home}, args...), strings.NewReader(stdin), &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	id := strings.TrimSpace(run("", "session", "new", "--title", "labels"))
	body := filepath.Join(t.TempDir(), "b.txt")
	if err := os.WriteFile(body, []byte("labelled x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("", "session", "append", id, "--kind", "tool-call", "--label", "a\xffb", body)
	run("", "session", "append", id, "--kind", "tool-call", "--label", "a\xfeb", body)

	for _, cmd := range []string{"history", "show"} {
		var page struct {
			Events []map[string]any `json:"events"`
		}
		out := run("", "--json", "session", cmd, id)
		if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Events) != 2 {
			t.Fatalf("%s --json: %v: %.300s", cmd, err, out)
		}
		a, b := eventJSONWithoutSeq(page.Events[0]), eventJSONWithoutSeq(page.Events[1])
		if a == b {
			t.Errorf("session %s --json: the events labelled %q and %q read the same: %s", cmd, "a\xffb", "a\xfeb", a)
		}
		for k, want := range []string{"a\xffb", "a\xfeb"} {
			checkLabelBase64(t, "session "+cmd, page.Events[k], want)
		}
	}
	// find, entry, quote and search alike, of the first event.
	var found struct {
		Hits []map[string]any `json:"hits"`
	}
	if err := json.Unmarshal([]byte(run("", "--json", "session", "find", id, "x")), &found); err != nil || len(found.Hits) != 2 {
		t.Fatalf("find --json: %v %+v", err, found)
	}
	checkLabelBase64(t, "session find", found.Hits[0], "a\xffb")
	for _, cmd := range []string{"entry", "quote"} {
		var one map[string]any
		if err := json.Unmarshal([]byte(run("", "--json", "session", cmd, id, "0")), &one); err != nil {
			t.Fatalf("%s --json: %v", cmd, err)
		}
		checkLabelBase64(t, "session "+cmd, one, "a\xffb")
	}
	var searched struct {
		Hits []map[string]any `json:"hits"`
	}
	if err := json.Unmarshal([]byte(run("", "--json", "search", "labelled", "--session", id)), &searched); err != nil || len(searched.Hits) == 0 {
		t.Fatalf("search --json: %v %+v", err, searched)
	}
	checkLabelBase64(t, "search", searched.Hits[0], "a\xfeb") // the newest event of the text

	// A label that is UTF-8 has no label_base64.
	run("", "session", "append", id, "--kind", "note", "--label", "ok é", body)
	var page struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal([]byte(run("", "--json", "session", "history", id, "--limit", "1")), &page); err != nil || len(page.Events) != 1 {
		t.Fatalf("history --json: %v", err)
	}
	if _, ok := page.Events[0]["label_base64"]; ok || page.Events[0]["label"] != "ok é" {
		t.Errorf("a UTF-8 label: %v", page.Events[0])
	}
}

// checkLabelBase64 checks that ev (a --json object of cmd) gives label's
// bytes in label_base64.
func checkLabelBase64(t *testing.T, cmd string, ev map[string]any, label string) {
	t.Helper()
	s, _ := ev["label_base64"].(string)
	if got, err := base64.StdEncoding.DecodeString(s); err != nil || string(got) != label {
		t.Errorf("%s --json: label_base64 %q (%v), want the bytes %q", cmd, s, err, label)
	}
}

// eventJSONWithoutSeq is an event of a page as JSON, without what differs
// between two appends of the same body (its seq and time).
func eventJSONWithoutSeq(ev map[string]any) string {
	delete(ev, "seq")
	delete(ev, "time")
	b, _ := json.Marshal(ev)
	return string(b)
}
