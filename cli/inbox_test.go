package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// TestInboxReadOnlyStore: on a store this user may read but not write
// (another account's, a read-only mount), `inbox ls` and `inbox show`
// failed with "take the writer lock ...: permission denied", while `inbox
// status` and `session ls` read it. They read it now, and say that the
// saves waiting need an account that can write the store.
func TestInboxReadOnlyStore(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	save := func(content string) {
		w := inbox.NewWriter(vfs.OS, home, inbox.ProcessName(time.Now(), 1<<30))
		now := time.Now()
		if err := w.Save(inbox.Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: content}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	save("taken in")
	r, err := agent.Open(home, agent.Options{Writable: true}) // drains it
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	save("still waiting")

	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: readOnlyLock{vfs.OS}, Home: home, JSON: true}
	if err := (&InboxLsCmd{}).Run(e); err != nil {
		t.Fatalf("inbox ls on a read-only store: %v", err)
	}
	var list []agent.InboxSummary
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(list) != 1 || list[0].Client != "codex" || list[0].Saves != 1 {
		t.Fatalf("inbox ls: %+v, want the codex inbox with the save taken in", list)
	}
	if !strings.Contains(errb.String(), "1 save(s) wait to be taken in, which needs an account that can write the store") {
		t.Fatalf("stderr %q: want the save waiting said", errb.String())
	}
	out.Reset()
	if err := (&InboxShowCmd{Client: "codex"}).Run(e); err != nil {
		t.Fatalf("inbox show on a read-only store: %v", err)
	}
	if !strings.Contains(out.String(), `"content": "taken in"`) {
		t.Fatalf("inbox show: %s", out.String())
	}
}
