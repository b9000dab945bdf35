package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/eventlog"
)

// The text summary of an import: a directory the walk could not list is
// not one of its "N file(s)"; a file of thousands of lines that did not
// parse lists 20 of them, then how many more (--json lists them all); a
// file taken up where an import cut short stopped says "continued", not
// "grown" (it may not have grown at all).
func TestImportSummaryCountsFilesCapsProblemsSaysContinued(t *testing.T) {
	id := eventlog.ID{1}
	rep := agent.ImportReport{Format: agent.FormatClaudeCode, Grown: 1, Unchanged: 0, Failed: 1, Unparsed: 30}
	rep.Files = []agent.ImportedFile{
		{Path: "/p/a.jsonl", Status: agent.ImportGrown, Session: &id, Lines: 40, Unparsed: 30, Continued: true,
			Note: "continued: the last import of it stopped part way"},
		{Path: "/p/locked", Status: agent.ImportFailed, Directory: true, Note: "directory not readable: permission denied"},
	}
	for i := 1; i <= 30; i++ {
		rep.Problems = append(rep.Problems, agent.ImportProblem{File: "/p/a.jsonl", Line: i, Reason: "not JSON"})
	}
	rep.Problems = append(rep.Problems, agent.ImportProblem{File: "/p/locked", Reason: "permission denied"})
	var out bytes.Buffer
	printImport(&Env{Stdout: &out}, importJSON{ImportReport: rep}, "")
	text := out.String()
	for _, want := range []string{
		"claude-code: 1 file(s): 0 new, 1 grown, 0 unchanged, 0 rewritten (imported again as new sessions), 0 failed; 1 directory(ies) could not be listed",
		"  continued ",
		"/p/a.jsonl:20: not JSON\n",
		"/p/a.jsonl: and 10 more (--json lists them all)\n",
		"/p/locked: permission denied\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "/p/a.jsonl:21:") || strings.Contains(text, "  grown ") {
		t.Errorf("the summary lists more than 20 problems of a file, or calls a continued file grown:\n%s", text)
	}
	if n := strings.Count(text, ": not JSON\n"); n != 20 {
		t.Errorf("%d problems of a file listed: want 20", n)
	}
}

// A file with problems past the report's list (agent.MaxImportProblems):
// the summary's "and N more" counts them too (ImportProblem.LeftOut) and
// says --json lists only the import's first ones; a file that began where
// the list was nearly full says so after its last listed; the problems
// left out of no listed file are the "... and N more".
func TestImportSummaryCountsProblemsLeftOutPerFile(t *testing.T) {
	rep := agent.ImportReport{Format: agent.FormatClaudeCode, Unparsed: 330, ProblemsLeftOut: 305}
	for i := 1; i <= 30; i++ {
		rep.Problems = append(rep.Problems, agent.ImportProblem{File: "/p/a.jsonl", Line: i, Reason: "not JSON"})
	}
	rep.Problems[29].LeftOut = 200
	rep.Problems = append(rep.Problems, agent.ImportProblem{File: "/p/b.jsonl", Line: 1, Reason: "not JSON", LeftOut: 100})
	var out bytes.Buffer
	printImport(&Env{Stdout: &out}, importJSON{ImportReport: rep}, "")
	text := out.String()
	for _, want := range []string{
		"/p/a.jsonl: and 210 more (--json lists the first 200 of the import's problems)\n",
		"/p/b.jsonl:1: not JSON\n  /p/b.jsonl: and 100 more (--json lists the first 200 of the import's problems)\n",
		"  ... and 5 more\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "lists them all") {
		t.Errorf("the summary sends the user to --json for problems it leaves out:\n%s", text)
	}
}
