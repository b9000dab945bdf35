package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// TestImportNestedTooDeep: a line whose JSON nests deeper than
// encoding/json's 10,000 levels is reported as nested too deep at its
// file:line (not "not JSON", which it would be to a reader that looked no
// further), kept byte for byte, read whole or in chunks, with no stack
// blow-up however deep it goes; 10,000 levels are JSON as any line is.
func TestImportNestedTooDeep(t *testing.T) {
	good := claudeLines("d", 1)
	codexMeta := `{"timestamp":"2026-01-07T08:30:00.100Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566677","timestamp":"2026-01-07T08:30:00.050Z","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli","model_provider":"openai"}}`
	nest := func(n int) string { return strings.Repeat(`{"a":[`, n/2) + "1" + strings.Repeat("]}", n/2) }
	for _, tc := range []struct {
		format, head, line string
		deep               bool
	}{
		{FormatClaudeCode, good[0], `{"type":"user","sessionId":"d","message":{"role":"user","content":` + nest(10002) + `},"uuid":"u9","timestamp":"2026-02-10T21:01:01.000Z"}`, true},
		{FormatClaudeCode, good[0], `{"type":"user","sessionId":"d","toolUseResult":` + nest(1_000_000) + `}`, true},
		{FormatClaudeCode, good[0], strings.Repeat("[", 200_000), true}, // never closed
		{FormatClaudeCode, good[0], `{"type":"progress","data":` + nest(9998) + `}`, false},
		{FormatCodex, codexMeta, `{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":` + nest(20000) + `}`, true},
	} {
		for _, chunk := range []int{0, 300} {
			name := fmt.Sprintf("%s %d bytes, chunks of %d", tc.format, len(tc.line), chunk)
			fsys := vfs.NewMem()
			r, clk := clockedRook(t, fsys)
			src := "/src/p/d.jsonl"
			if tc.format == FormatCodex {
				src = "/src/p/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566677.jsonl"
			}
			data := writeSourceBytes([]string{tc.head, tc.line, tc.head}, "")
			writeAt(t, fsys, clk, src, data, time.Hour)
			rep, err := r.Import(ImportOptions{Format: tc.format, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			f := fileByPath(t, rep, src)
			if f.Session == nil || f.Status != ImportNew {
				t.Fatalf("%s: %+v", name, f)
			}
			mustExport(t, r, *f.Session, data)
			var deep []ImportProblem
			for _, p := range rep.Problems {
				if strings.Contains(p.Reason, "nested too deep") {
					deep = append(deep, p)
				}
			}
			if !tc.deep {
				if len(deep) > 0 {
					t.Fatalf("%s: 9,998 levels reported too deep: %+v", name, rep.Problems)
				}
				continue
			}
			if len(deep) != 1 || deep[0].File != src || deep[0].Line != 2 || f.Unparsed != 1 {
				t.Fatalf("%s: want one problem at line 2 saying nested too deep, got %+v (unparsed %d)", name, rep.Problems, f.Unparsed)
			}
		}
	}
}
