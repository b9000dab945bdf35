package agent

import (
	"bytes"
	"fmt"
	"path/filepath"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// A Claude Code subagent's edits are in its own transcript, imported as
// a child session of its parent's: a rewind of the parent reads them
// there (family_states.go). Once that child is removed (session rm,
// retention), nothing in rook names it: no session is its child, and a
// removal leaves no record. The parent's Task result still does (its
// toolUseResult.agentId), and that is what is checked: a subagent a
// result at or after the point reports, held by no imported session
// linked to the rewound one, wrote what is not known, and the rewind
// refuses, nothing written. What rook holds cannot tell a subagent
// removed from one whose transcript was never imported (the parent's
// file imported alone, or its subagent's file gone): both are refused,
// as both leave the rewind not knowing what the subagent wrote. Not
// needed: a subagent its result says used no tool (totalToolUseCount 0:
// it wrote nothing), and one whose result came before the point (it ran
// before it).

// subagentReport is a subagent a Claude Code Task result reports.
type subagentReport struct {
	agent string // its agentId
	tools *int64 // totalToolUseCount, when the result says it
}

// claudeSubagentReports reads the subagents tool result body reports; a
// body that does not read reports none (as it gives no state: diff.go).
func (r *Rook) claudeSubagentReports(body cas.Key) []subagentReport {
	lines, err := r.importedLines(body, func(rest []byte) bool { return bytes.Contains(rest, []byte(`"agentId"`)) })
	if err != nil {
		return nil
	}
	var out []subagentReport
	for _, line := range lines {
		var l struct {
			ToolUseResult json.RawMessage `json:"toolUseResult"`
		}
		if json.Unmarshal(trimNewline(line), &l) != nil || len(l.ToolUseResult) == 0 || l.ToolUseResult[0] != '{' {
			continue
		}
		var tr struct {
			AgentID json.RawMessage `json:"agentId"`
			Tools   *int64          `json:"totalToolUseCount"`
		}
		if json.Unmarshal(l.ToolUseResult, &tr) != nil {
			continue
		}
		if a := rawString(tr.AgentID); a != "" {
			out = append(out, subagentReport{agent: a, tools: tr.Tools})
		}
	}
	return out
}

// noSubagents are Claude Code tools whose results report no subagent:
// their bodies are not read for one.
var noSubagents = map[string]bool{"Read": true, "Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true,
	"Bash": true, "BashOutput": true, "Grep": true, "Glob": true, "TodoWrite": true, "WebFetch": true, "WebSearch": true}

// missingSubagent is a subagent a Task result of the session reports
// that no imported session linked to it holds (removed since, or never
// imported): its agentId, the result's seq, and where its transcript is
// to import again ("" when it is not found).
type missingSubagent struct {
	agent string
	seq   uint64
	path  string
}

// missingSubagents are those Task results of imported Claude Code session
// id at or after event to report, whose family is fam; the first alone
// unless all. reported holds the source ids ("agent-<agentId>") of every
// subagent those results report, held or not (all read only).
func (r *Rook) missingSubagents(id eventlog.ID, to uint64, fam importedFamily, all bool) (out []missingSubagent, reported map[string]bool, err error) {
	seen := map[string]bool{}
	reported = map[string]bool{}
	for from := to; ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return out, reported, err
		}
		if len(evs) == 0 {
			return out, reported, nil
		}
		for _, ev := range evs {
			if ev.Kind != eventlog.KindToolResult || noSubagents[ev.Label] {
				continue
			}
			for _, s := range r.claudeSubagentReports(ev.Body) {
				reported["agent-"+s.agent] = true
				if fam.sources["agent-"+s.agent] || s.tools != nil && *s.tools == 0 || seen[s.agent] {
					continue
				}
				seen[s.agent] = true
				out = append(out, missingSubagent{agent: s.agent, seq: ev.Seq, path: r.subagentTranscript(fam, s.agent)})
				if !all {
					return out, reported, nil
				}
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// missingSubagentRefusal is the refusal of a rewind of imported Claude
// Code session id to event to, whose family is fam, when a Task result at
// or after the point reports a subagent that no imported session linked
// to it holds; nil when there is none.
func (r *Rook) missingSubagentRefusal(id eventlog.ID, to uint64, fam importedFamily) error {
	miss, _, err := r.missingSubagents(id, to, fam, false)
	if err != nil || len(miss) == 0 {
		return err
	}
	s := miss[0]
	what := fmt.Sprintf("cannot rewind the files: the Claude Code subagent %s, whose Task result is event #%d of %s (at or after the point), is in no imported session linked to it: its session was removed from rook since (session rm), or its transcript was never imported, and it worked in the same workspace: what it wrote is not known, so the files' states after the point may hold it", s.agent, s.seq, fam.this(id))
	if s.path != "" {
		return fmt.Errorf("%s; import its transcript again (`rook import claude-code %s`: it is linked to its parent) and run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only", what, ShellQuote(s.path))
	}
	return fmt.Errorf("%s; its transcript (agent-%s.jsonl) is not beside the session's to import again: put the files back yourself and rewind with --keep-files, which rewinds the conversation only", what, s.agent)
}

// this names session id in the words of a family it is of: "this
// session" when the family starts from it.
func (f importedFamily) this(id eventlog.ID) string {
	if id == f.start {
		return "this session"
	}
	return "session " + id.String()
}

// subagentTranscript is where subagent agent's transcript is, beside
// the transcript of the imported session fam starts from (or one linked
// to it): <session>/subagents/agent-<agent>.jsonl, or an older Claude
// Code's agent-<agent>.jsonl, in its project directory (.zst too); ""
// when none is there.
func (r *Rook) subagentTranscript(fam importedFamily, agent string) string {
	dirs := map[string]bool{}
	var order []string
	for _, s := range append(append([]eventlog.ID{}, fam.line...), fam.members...) {
		m, err := r.Log.ReadMeta(s)
		if err != nil || m.Source == nil {
			continue
		}
		if d := filepath.Dir(m.Source.Path); !dirs[d] {
			dirs[d] = true
			order = append(order, d)
		}
	}
	names := []string{"agent-" + agent + ".jsonl", "agent-" + agent + ".jsonl.zst"}
	found := func(p string) bool {
		fi, err := r.fs.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	for _, d := range order {
		if filepath.Base(d) == "subagents" {
			d = filepath.Dir(filepath.Dir(d)) // (a subagent's own: its parent's project)
		}
		ents, _ := r.fs.ReadDir(d)
		for _, n := range names {
			if found(filepath.Join(d, n)) {
				return filepath.Join(d, n)
			}
			for _, e := range ents {
				if p := filepath.Join(d, e.Name(), "subagents", n); e.IsDir() && found(p) {
					return p
				}
			}
		}
	}
	return ""
}
