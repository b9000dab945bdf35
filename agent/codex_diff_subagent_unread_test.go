package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// importedApart imports c's P, then its subagent F in an import of its
// own (F's objects in records of their own, to damage alone).
func (c *codexForkPair) importedApart(tr tree) (r *Rook, p, f eventlog.ID) {
	t := c.t
	day := filepath.Join(c.dir, "codex", "2026", "02", "03")
	writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-00-00-"+codexPID+".jsonl"), c.p, "")
	writeTree(t, c.ws, tr)
	r = diskRook(t, filepath.Join(c.dir, "store"))
	for _, fr := range mustImport(t, r, FormatCodex, filepath.Join(c.dir, "codex")).Files {
		p = *fr.Session
	}
	writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-05-00-"+codexFID+".jsonl"), c.f, "")
	for _, fr := range mustImport(t, r, FormatCodex, filepath.Join(c.dir, "codex")).Files {
		if strings.Contains(fr.Path, codexFID) {
			f = *fr.Session
		}
	}
	if f.IsZero() {
		t.Fatal("the subagent's rollout was not imported")
	}
	return r, p, f
}

// A linked subagent's session that cannot be read (its log's header
// damaged, an object of its lines damaged or missing) failed the whole
// diff of its parent ("event #1 cannot be read: object ... is corrupt").
// The diff is the parent's own, as for a missing subagent, and a note
// names the subagent's session, why it does not read, that the files it
// changed are not shown, and what to do (`--json`: unread_subagents).
func TestCodexDiffNotesASubagentThatDoesNotRead(t *testing.T) {
	for _, tc := range []struct{ how, way string }{
		{"log", "`rook session rm ID`, then `rook import codex PATH` imports it again"},
		{"damaged", "`rook import codex --reread PATH` puts back what the store cannot read of it (else `rook session rm ID`, then `rook import codex PATH` imports it again)"},
		{"missing", "`rook store verify` says what is wrong and what to do"},
	} {
		t.Run(tc.how, func(t *testing.T) {
			c := codexWithSubagent(t)
			r, p, f := c.importedApart(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
			m, err := r.Log.ReadMeta(f)
			if err != nil {
				t.Fatal(err)
			}
			home := r.Store.Home()
			switch tc.how {
			case "log":
				if err := os.WriteFile(filepath.Join(home, cas.EventsDir, f.String()+".log"), []byte("not a log"), 0o600); err != nil {
					t.Fatal(err)
				}
			default:
				evs, err := r.Log.Read(f, 1, 1)
				if err != nil || len(evs) != 1 || evs[0].Kind != eventlog.KindToolCall {
					t.Fatalf("the subagent's patch call: %v, %+v", err, evs)
				}
				r = damagedStore(t, r, evs[0].Body, tc.how)
			}
			got, patch, d := diffFiles(t, r, p)
			if len(got) != 1 || got["n.txt"] != "added" || !strings.Contains(patch, "+1\n+B\n") {
				t.Fatalf("files %v:\n%s", got, patch)
			}
			want := fmt.Sprintf("session %s (a Codex subagent of this session, in the same workspace) cannot be read (", f)
			way := strings.NewReplacer("ID", f.String(), "PATH", ShellQuote(m.Source.Path)).Replace(tc.way)
			if len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], want) ||
				!strings.Contains(d.Notes[0], "): the files it changed are not shown unless this session changed them too; ") ||
				!strings.Contains(d.Notes[0], way) {
				t.Fatalf("notes %q, want %q ... %q", d.Notes, want, way)
			}
			if len(d.UnreadSubagents) != 1 || d.UnreadSubagents[0] != f.String() || len(d.MissingSubagents) != 0 {
				t.Fatalf("unread subagents %q, missing %q", d.UnreadSubagents, d.MissingSubagents)
			}
			if d.Patches.Applied != 2 || d.Patches.FromSubagents != 0 {
				t.Fatalf("patches %+v", d.Patches)
			}
		})
	}
}

// A subagent whose session's metadata does not read is linked to no
// session (nothing says it is a child): its thread reads as missing, and
// the note, which says it may have been removed or never imported, says
// too that a session of the store does not read, and what to do.
func TestCodexDiffNotesASubagentWhoseMetadataDoesNotRead(t *testing.T) {
	c := codexWithSubagent(t)
	r, p, f, _, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
	if err := os.WriteFile(filepath.Join(r.Store.Home(), cas.EventsDir, f.String()+".meta"), []byte("not metadata"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, d := diffFiles(t, r, p)
	if len(got) != 1 || got["n.txt"] != "added" {
		t.Fatalf("files %v", got)
	}
	want := fmt.Sprintf("session %s of this store does not read (its metadata): if it holds the subagent, `rook store verify` says what is wrong and what to do", f)
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "the Codex subagent "+codexFID+", whose spawn_agent output is event #4, is in no imported session linked to this session") ||
		!strings.Contains(d.Notes[0], want) {
		t.Fatalf("notes %q, want %q", d.Notes, want)
	}
	if len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != codexFID {
		t.Fatalf("missing subagents %q", d.MissingSubagents)
	}
}

// A subagent recorded outside the workspace (a sibling, after a `cd
// ../lib`) patched its own files there, and the workspace's n.txt by its
// absolute path: the diff shows n.txt alone, and its counts are of what
// it shows. They counted the patches of lib's files too ("applied" 3, 2
// of them the subagent's, and 1 "failed", with its note), though no file
// listed is theirs.
func TestCodexDiffCountsOnlyASubagentsPatchesItShows(t *testing.T) {
	c := newCodexForkPair(t)
	lib := filepath.Join(c.dir, "lib")
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1", "00:02")...)
	c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
	c.f = append(c.f, codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q}}}}`, codexFID, lib, codexPID)}.at(stampAt("00:03")))
	c.f = append(c.f, patchLines("s1", "*** Add File: lib.txt\n+l", "00:04")...)
	c.f = append(c.f, patchLines("s2", "*** Update File: "+filepath.Join(c.ws, "n.txt")+"\n@@\n-1\n+2", "00:05")...)
	in, _ := json.Marshal("*** Begin Patch\n*** Add File: other.txt\n+o\n*** End Patch\n")
	c.f = append(c.f,
		codexItem{"response_item", fmt.Sprintf(`{"type":"custom_tool_call","name":"apply_patch","call_id":"s3","input":%s}`, in)}.at(stampAt("00:06")),
		codexItem{"response_item", `{"type":"custom_tool_call_output","call_id":"s3","output":"Exit code: 1\nWall time: 0 seconds\nOutput:\nerror: other.txt exists\n"}`}.at(stampAt("00:06")))
	r, p, _, _, _ := c.imported(tree{"n.txt": "2\n"})
	got, patch, d := diffFiles(t, r, p)
	if len(got) != 1 || got["n.txt"] != "added" || !strings.Contains(patch, "+2\n") {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	if d.Patches.Applied != 2 || d.Patches.FromSubagents != 1 || d.Patches.Failed != 0 || len(d.Patches.Notes) != 0 {
		t.Fatalf("patches %+v", d.Patches)
	}
	if d.Files[0].Patches != 2 {
		t.Fatalf("n.txt: %d patch(es), want 2", d.Files[0].Patches)
	}
}
