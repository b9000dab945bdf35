package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// Sweeps of importing files as they grow: replaced under a read, a family
// imported file by file, strings cut out of lines exported byte for byte.

func exportBytes(t *testing.T, r *Rook, id eventlog.ID) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := r.ExportSource(id, &out); err != nil {
		t.Fatalf("export %s: %v", id, err)
	}
	return out.Bytes()
}

func sortInts(a []int) {
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			if a[j] < a[i] {
				a[i], a[j] = a[j], a[i]
			}
		}
	}
}

func importWithChunk(t *testing.T, r *Rook, format string, chunk int, paths ...string) ImportReport {
	t.Helper()
	rep, err := r.Import(ImportOptions{Format: format, Paths: paths, ChunkBytes: chunk})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func familyDump(t *testing.T, r *Rook) map[string]string {
	t.Helper()
	out := map[string]string{}
	metas := sessionMetas(t, r)
	pathOf := map[eventlog.ID]string{}
	for _, m := range metas {
		pathOf[m.ID] = m.Source.Path
	}
	for _, m := range metas {
		s, err := r.Log.Summary(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		parent := ""
		if m.Parent != nil {
			parent = pathOf[*m.Parent]
		}
		got := exportBytes(t, r, m.ID)
		out[m.Source.Path] = fmt.Sprintf("tokens %d/%d copied %d/%d parent %q tags %v title %q srcparent %q cont %q bytes %d %x",
			s.TokensIn, s.TokensOut, m.Source.CopiedIn, m.Source.CopiedOut, parent, m.Tags, m.Title, m.Source.Parent, m.Source.ContinuedIn, len(got), hashHex(got)[:12])
	}
	return out
}

// A grown file replaced (grown more, rewritten, rewritten with the same
// size, truncated, emptied, or with a partial line) at each read the
// import makes of it, read whole or in chunks, with or without the kept
// import state: every session exports a prefix of one version, exactly as
// recorded, and the next import brings a session to the file as it is.
func TestImportFileReplacedAtEveryRead(t *testing.T) {
	var turns [][]string
	for i := 1; i <= 5; i++ {
		turns = append(turns, claudeLines("x", i))
	}
	upTo := func(n int) []byte {
		var all []string
		for _, l := range turns[:n] {
			all = append(all, l...)
		}
		return writeSourceBytes(all, "")
	}
	v0, v1 := upTo(2), upTo(3)
	v2s := map[string][]byte{
		"grown":        upTo(5),
		"rewritten":    writeSourceBytes(append(claudeLines("y", 1), claudeLines("y", 2)...), ""),
		"same size":    bytes.Replace(v1, []byte("fix the server, turn 1"), []byte("fix the SERVER, turn 1"), 1),
		"cut in v0":    v0[:len(v0)/2],
		"cut in tail":  v1[:len(v0)+(len(v1)-len(v0))/2],
		"partial line": append(bytes.Clone(v1), []byte(`{"type":"user","mess`)...),
		"emptied":      {},
	}
	src := "/src/-w/x.jsonl"
	for name, v2 := range v2s {
		for _, chunk := range []int{0, 300} {
			for _, stMin := range []int64{1, 1 << 40} {
				for k := 1; k < 40; k++ {
					setImportStateMin(t, stMin)
					fsys := vfs.NewMem()
					r := testRook(t, fsys)
					writeSourceFile(t, fsys, src, v0)
					importWithChunk(t, r, FormatClaudeCode, chunk, src)
					writeSourceFile(t, fsys, src, v1)
					importWithChunk(t, r, FormatClaudeCode, chunk, src) // seen growing: a state
					writeSourceFile(t, fsys, src, append(bytes.Clone(v1), upTo(4)[len(v1):]...))
					v1b := upTo(4)
					ops := 0
					fired := false
					fsys.SetHook(func(op vfs.Op, path string) error {
						if path != src || fired {
							return nil
						}
						ops++
						if ops == k {
							fired = true
							fsys.SetHook(nil)
							writeSourceFile(t, fsys, src, v2)
						}
						return nil
					})
					rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
					fsys.SetHook(nil)
					if err != nil {
						t.Fatalf("%s k %d: %v", name, k, err)
					}
					if !fired {
						break
					}
					for _, m := range sessionMetas(t, r) {
						var out bytes.Buffer
						x, err := r.ExportSource(m.ID, &out)
						if err != nil {
							t.Fatalf("%s chunk %d st %d k %d: export %s: %v (%+v)", name, chunk, stMin, k, m.ID, err, rep.Files)
						}
						got := out.Bytes()
						if !bytes.HasPrefix(v1b, got) && !bytes.HasPrefix(v2, got) {
							t.Fatalf("%s chunk %d st %d k %d: session %s exports %d bytes, a prefix of neither version (%+v)", name, chunk, stMin, k, m.ID, len(got), rep.Files)
						}
						if !x.Exact {
							t.Fatalf("%s chunk %d st %d k %d: session %s not exact %+v (%+v)", name, chunk, stMin, k, m.ID, x, rep.Files)
						}
					}
					rep = importWithChunk(t, r, FormatClaudeCode, chunk, src)
					f := rep.Files[0]
					if len(v2) > 0 {
						if f.Session == nil {
							t.Fatalf("%s chunk %d st %d k %d: next %+v", name, chunk, stMin, k, f)
						}
						if got := exportBytes(t, r, *f.Session); !bytes.Equal(got, v2) {
							t.Fatalf("%s chunk %d st %d k %d: next import's session %s exports %d bytes, want %d (%+v)", name, chunk, stMin, k, f.Session, len(got), len(v2), f)
						}
					}
					if again := importWithChunk(t, r, FormatClaudeCode, chunk, src); again.Unchanged != 1 || again.Lines != 0 {
						t.Fatalf("%s chunk %d st %d k %d: again %+v", name, chunk, stMin, k, again.Files)
					}
				}
			}
		}
	}
}

// A Claude Code family (a parent ended by continued-in, a fork, a
// subagent, the background continuation) growing at random bytes, each
// step importing the files one by one in a random order: the same tokens,
// links, tags, titles and bytes as one import of the final tree.
func TestImportFamilyFileByFileLikeOnce(t *testing.T) {
	proj := "/p/-home-u-proj"
	P, F, S, B := proj+"/P.jsonl", proj+"/F.jsonl", proj+"/P/subagents/agent-s1.jsonl", proj+"/B.jsonl"
	full := map[string][]string{
		P: nil,
		F: append(append(claudeForkLines("P", "F", 1), claudeForkLines("P", "F", 2)...), append(claudeLines("F", 3), claudeLines("F", 4)...)...),
		S: append(claudeLines("P", 6), claudeLines("P", 7)...),
	}
	bgOld, bgNew := continuedFiles("P", "B", 8, 9)
	full[P], full[B] = bgOld, bgNew
	order := []string{P, F, S, B}
	rng := rand.New(rand.NewPCG(8, 9))
	for run := range 40 {
		// steps: at each, each file has some number of its lines
		steps := 2 + rng.IntN(3)
		have := map[string][]int{}
		for _, p := range order {
			var ks []int
			for range steps - 1 {
				ks = append(ks, rng.IntN(len(writeSourceBytes(full[p], ""))+1))
			}
			sortInts(ks)
			have[p] = append(ks, len(writeSourceBytes(full[p], "")))
		}
		for _, chunk := range []int{0, 1500} {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var log []string
			for k := range steps {
				for _, p := range order {
					n := have[p][k]
					if n == 0 {
						continue
					}
					writeSourceFile(t, fsys, p, writeSourceBytes(full[p], "")[:n])
				}
				var rep ImportReport
				for _, i := range rng.Perm(len(order)) {
					if have[order[i]][k] == 0 {
						continue
					}
					one := importWithChunk(t, r, FormatClaudeCode, chunk, order[i])
					rep.Files = append(rep.Files, one.Files...)
				}
				for _, f := range rep.Files {
					if f.Status == ImportFailed || f.Status == ImportRewritten {
						t.Fatalf("run %d step %d: %+v", run, k, f)
					}
				}
				log = append(log, fmt.Sprint(have))
			}
			inc := familyDump(t, r)
			fsys2 := vfs.NewMem()
			r2 := testRook(t, fsys2)
			for _, p := range order {
				writeSource(t, fsys2, p, full[p], "")
			}
			importWithChunk(t, r2, FormatClaudeCode, chunk, proj)
			once := familyDump(t, r2)
			for _, p := range order {
				if inc[p] != once[p] {
					t.Errorf("run %d chunk %d %v: %s\n incremental: %s\n       once: %s", run, chunk, have, p, inc[p], once[p])
				}
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// Long strings (cut out of the line as objects) holding every JSON escape,
// lone surrogates, invalid UTF-8 and raw control bytes export byte for
// byte, Claude Code and Codex, plain and .zst, whole and in chunks.
func TestExportEscapesInCutStrings(t *testing.T) {
	pieces := []string{`\/`, `\u00e9`, `\u00E9`, `\uD83D\uDE00`, `\ud83d\ude00`, `\ud800`, `\udc00x`, `\u0000`, `é`, "\xff\xfe", `\b\f\r\t\n`, `\"`, `\\`, "\x01", `\u2028`, "\u2028", `\uFFFD`, "\xed\xa0\x80", "\xc3", `\u0041`}
	var lines []string
	ls := claudeLines("e", 1)
	lines = append(lines, ls[0])
	for i, p := range pieces {
		s := strings.Repeat("x", 300) + p + strings.Repeat("y", 300) + p
		lines = append(lines, fmt.Sprintf(`{"type":"user","sessionId":"e","message":{"role":"user","content":"%s"},"toolUseResult":{"stdout":"%s"},"uuid":"e%d","timestamp":"2026-02-10T21:01:09.000Z"}`, s, s, i))
		lines = append(lines, fmt.Sprintf(`{"type":"assistant","sessionId":"e","message":{"model":"m","id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"%s"}}]},"uuid":"f%d","timestamp":"2026-02-10T21:01:10.000Z"}`, i, i, s, i))
		lines = append(lines, fmt.Sprintf(`{"type":"%s","sessionId":"e","x":"%s"}`, "weird"+p, s))
		lines = append(lines, fmt.Sprintf(`{"type":"progress","sessionId":"e","data":{"type":"bash_progress","output":"%s"}}`, s))
	}
	data := writeSourceBytes(lines, "")
	for _, chunk := range []int{0, 5000} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/src/p/e.jsonl"
		writeSourceFile(t, fsys, src, data)
		rep := importWithChunk(t, r, FormatClaudeCode, chunk, src)
		id := *rep.Files[0].Session
		mustExport(t, r, id, data)
	}
	// codex
	var cl []string
	cl = append(cl, `{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a47","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}`)
	for _, p := range pieces {
		s := strings.Repeat("x", 300) + p + strings.Repeat("y", 300) + p
		cl = append(cl, fmt.Sprintf(`{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"%s"}]}}`, s))
		cl = append(cl, fmt.Sprintf(`{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"%s","call_id":"c"}}`, s))
		cl = append(cl, fmt.Sprintf(`{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"%s"}}`, s))
	}
	cdata := writeSourceBytes(cl, "")
	for _, name := range []string{".jsonl", ".jsonl.zst"} {
		for _, chunk := range []int{0, 5000} {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			src := "/c/rollout-2026-01-02T03-04-05-019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a47" + name
			if name == ".jsonl" {
				writeSourceFile(t, fsys, src, cdata)
			} else {
				writeZst(t, fsys, src, cdata)
			}
			rep := importWithChunk(t, r, FormatCodex, chunk, src)
			mustExport(t, r, *rep.Files[0].Session, cdata)
		}
	}
}
