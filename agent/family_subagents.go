package agent

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
// before it), unless that result launched it in the background, or a
// SendMessage started it again, and the transcript does not say it
// stopped before the point: it ran on (family_background.go).

// subagentReport is a subagent a Claude Code Task result reports.
type subagentReport struct {
	agent string // its agentId
	tools *int64 // totalToolUseCount, when the result says it
	// background: the result is its launch in the background (the main
	// thread's toolUseResult says "isAsync", "status":"async_launched";
	// the text, "Async agent launched" and "(internal ID ...)"): it runs
	// on after it.
	background bool
}

// claudeSubagentReports reads the subagents tool result body reports; a
// body that does not read reports none, and the error (a Task result's
// is needed all the same: unreadTaskResult).
// A Task (Agent) result with no toolUseResult naming one, as Claude Code
// writes a subagent's own (the enrichment is its main thread's only), is
// read by the text it gave the model: "agentId: <id> (...)" and its
// "<usage>...tool_uses: N...</usage>" (claudeTaskText); task says the
// result is of such a call (the text of another tool's, a Read of a
// transcript, names no subagent it ran).
func (r *Rook) claudeSubagentReports(body cas.Key, task bool) ([]subagentReport, error) {
	lines, err := r.importedLines(body, func(rest []byte) bool {
		return bytes.Contains(rest, []byte(`"agentId"`)) || task && bytes.Contains(rest, []byte(`agentId: `))
	})
	if err != nil {
		return nil, err
	}
	var out []subagentReport
	for _, line := range lines {
		var l struct {
			ToolUseResult json.RawMessage `json:"toolUseResult"`
			Message       struct {
				Content []struct {
					Type    string          `json:"type"`
					Content json.RawMessage `json:"content"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(trimNewline(line), &l) != nil {
			continue
		}
		if len(l.ToolUseResult) == 0 || l.ToolUseResult[0] != '{' {
			if task {
				for _, b := range l.Message.Content {
					if b.Type == "tool_result" {
						out = append(out, claudeTaskText(b.Content)...)
					}
				}
			}
			continue
		}
		var tr struct {
			AgentID json.RawMessage `json:"agentId"`
			Tools   *int64          `json:"totalToolUseCount"`
			IsAsync json.RawMessage `json:"isAsync"`
			Status  json.RawMessage `json:"status"`
		}
		if json.Unmarshal(l.ToolUseResult, &tr) != nil {
			continue
		}
		if a := rawString(tr.AgentID); a != "" {
			bg := string(tr.IsAsync) == "true" || rawString(tr.Status) == "async_launched"
			out = append(out, subagentReport{agent: a, tools: tr.Tools, background: bg})
		}
	}
	return out, nil
}

// claudeTaskText reads the subagent a Task result's content (a string,
// or text blocks) names in the lines Claude Code adds for the model, not
// in the agent's report (the model's own words, where a line reading
// "agentId: x", a meta file or a log quoted, names no subagent this one
// ran): "agentId: <id>" then, on its line, Claude Code's parenthesis
// (" (for resuming ...)", " (use SendMessage ...)", and a background
// agent's " (internal ID - do not mention to user. Use SendMessage
// ...)", its launch said before it, with no usage yet), or on the next
// its "<usage>", whose tool_uses it gives.
func claudeTaskText(content json.RawMessage) []subagentReport {
	var texts []string
	var one string
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	switch {
	case json.Unmarshal(content, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(content, &blocks) == nil:
		for _, b := range blocks {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
	}
	var out []subagentReport
	for _, t := range texts {
		lines := strings.Split(t, "\n")
		for i := range lines {
			a, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "agentId: ")
			if !ok {
				continue
			}
			a, paren, _ := strings.Cut(a, " ")
			usage := i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "<usage>")
			if a == "" || !usage && !claudeAgentParen(paren) {
				continue
			}
			rep := subagentReport{agent: a}
			if !usage {
				// (Its tool uses not said: it may have written.)
				rep.background = strings.Contains(paren, "internal ID") || strings.Contains(t, "Async agent launched")
				out = append(out, rep)
				continue
			}
			for _, u := range lines[i+1:] {
				u = strings.TrimPrefix(strings.TrimSpace(u), "<usage>")
				if n, ok := strings.CutPrefix(u, "tool_uses: "); ok {
					if v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(n, "</usage>")), 10, 64); err == nil {
						rep.tools = &v
					}
				}
				if strings.HasSuffix(u, "</usage>") {
					break
				}
			}
			out = append(out, rep)
		}
	}
	return out
}

// claudeAgentParen says whether what follows the id on an "agentId: "
// line is the parenthesis Claude Code writes there.
func claudeAgentParen(p string) bool {
	if !strings.HasPrefix(p, "(") {
		return false
	}
	for _, w := range []string{"for resuming", "SendMessage", "internal ID"} {
		if strings.Contains(p, w) {
			return true
		}
	}
	return false
}

// claudeTaskTools are the Claude Code tools that run a subagent: Task,
// named Agent since 2.1.
var claudeTaskTools = map[string]bool{"Task": true, "Agent": true}

// noSubagents are Claude Code tools whose results report no subagent:
// their bodies are not read for one.
var noSubagents = map[string]bool{"Read": true, "Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true,
	"Bash": true, "BashOutput": true, "Grep": true, "Glob": true, "TodoWrite": true, "WebFetch": true, "WebSearch": true}

// missingSubagent is a subagent a Task result of the session reports
// (or a Codex spawn_agent output names) that no imported session linked
// to it holds (removed since, or never imported): its agentId (a Codex
// thread id), the result's seq, and where its transcript is to import
// again ("" when it is not found). Of Codex's, also the session whose
// output names it, and the time of its spawn_agent call (zero: not read).
type missingSubagent struct {
	agent string
	// session is whose event the result is: the session asked of, or a
	// subagent of its family (a subagent's subagent's result is in the
	// transcript of the one that ran it).
	session eventlog.ID
	seq     uint64
	path    string
	at      time.Time
	// why says, of a rewind's, why one whose result is before the point
	// is needed (subagentsRunningOn), from ", before the point"; "": its
	// result is at or after it.
	why string
	// Of a Codex MultiAgentV2 spawn (codex_family_subagents_v2.go), agent
	// is its task's canonical path: task names the spawn (codexTaskKey),
	// spawners are the threads whose lines the rollout its output is in
	// may hold (codexLineage: its spawner is one), and sameTask is how
	// many spawns of its path the family holds.
	task     string
	spawners []string
	sameTask int
	// unread: the result (label its tool's) does not read, so which
	// subagent it names, if any, is not known (agent ""): see
	// unreadTaskResult.
	unread error
	label  string
}

// A Task (Agent) result, or a Codex spawn_agent output, whose object
// does not read (damaged, or gone from the store) names no subagent: it
// was passed over, and a rewind that the subagent it ran (not imported)
// should have stopped wrote the files as though none had run, exit 0.
// Which subagent it ran is in that object alone, so whether an imported
// session linked to the rewound one holds it cannot be told (nor, from
// its call, whether it ran in the background: run_in_background is the
// default of recent Claude Code, and its call id is in the result too).
// Read conservatively, such a result is a missingSubagent (unread set)
// wherever the check would read it: a Claude Code Task result at or
// after the point, or before it (it may be a background launch that ran
// on after it), of the session or of a subagent of its family; a Codex
// spawn_agent output anywhere in the family's rollouts, its subagent
// counted from any time (its call is not known). A rewind refuses,
// saying which event, why and what to do (unreadHow: --reread puts it
// back), or --keep-files; a diff notes it (unread_events, of the
// session's own). What needs no such result is not refused: a result of
// another tool (a Read's, a Bash's: noSubagents; a tool not known is one
// an own unread result refuses already: transcript_own_unread.go), a
// rewind with --keep-files, and, of Codex, a rewind whose file states
// no write from the spawn on could change (codexOtherWrite.within).

// unreadTaskWhat says what the result of s (unread) is, in words.
func (s missingSubagent) unreadTaskWhat() string {
	if s.label == "spawn_agent" {
		return "the output of a spawn_agent call"
	}
	if strings.HasPrefix(s.label, "A") {
		return "the result of an " + s.label + " call"
	}
	return "the result of a " + s.label + " call"
}

// unreadTaskNote is a diff's note of s, a result that does not read
// (unreadTaskResult), of family fam of session id: which subagent it ran
// (spawned, of Codex) is not known, and what to do.
func (r *Rook) unreadTaskNote(s missingSubagent, id eventlog.ID, fam importedFamily) string {
	ran := "ran"
	if s.label == "spawn_agent" {
		ran = "spawned"
	}
	return fmt.Sprintf("%s (%s) cannot be read (%v): which subagent it %s is not known, nor whether an imported session linked to %s holds it: the files a subagent it %[4]s changed are not shown unless %[5]s changed them too; %s",
		s.where(id, fam), s.unreadTaskWhat(), s.unread, ran, fam.this(id), r.unreadHowOf(s.session, s.unread))
}

// key names s among a session's missing subagents: its agent, or, of a
// MultiAgentV2 spawn (a path may be spawned again once closed), its
// spawn; of one whose result does not read, that result.
func (s missingSubagent) key() string {
	if s.unread != nil {
		return fmt.Sprintf("unread %s #%d", s.session, s.seq) // (its agent not known)
	}
	if s.task != "" {
		return s.task
	}
	return s.agent
}

// where names the result's event in the words of fam, whose rewound (or
// diffed) session is id: "event #N of this session", or of the
// subagent's session it is in.
func (s missingSubagent) where(id eventlog.ID, fam importedFamily) string {
	if s.session.IsZero() || s.session == id {
		return fmt.Sprintf("event #%d of %s", s.seq, fam.this(id))
	}
	return fmt.Sprintf("event #%d of session %s (%s)", s.seq, s.session, fam.kin[s.session])
}

// missingSubagentNote is a diff's note of subagent s of agent what, whose
// result (its kind named by result) no imported session linked to
// session id holds (fam its family): the diff is not refused, its
// changes are not shown; hint says how to import it, if it is said.
func missingSubagentNote(what, result string, id eventlog.ID, fam importedFamily, s missingSubagent, hint string) string {
	at := fmt.Sprintf("event #%d", s.seq)
	if !s.session.IsZero() && s.session != id {
		at = s.where(id, fam) // (a subagent's subagent)
	}
	n := fmt.Sprintf("the %s subagent %s, whose %s is %s, is in no imported session linked to %s (removed since, or never imported): the files it changed are not shown unless %[5]s changed them too", what, s.agent, result, at, fam.this(id))
	if hint != "" {
		n += "; " + hint
	}
	return n
}

// missingSubagents are those Task results of imported Claude Code session
// id at or after event to report, whose family is fam; the first alone
// unless all. So too those of the imported subagents of the family, at
// or after the point by time (afterThePoint): a subagent's own Task
// (Claude Code 2.1.172 on) starts one whose result is in its transcript,
// not the session's, while Claude Code keeps every subagent's transcript,
// at any depth, beside the session's, imported as its child: each is a
// member, read once (maxFamily bounds them). A diff (all) reads only the
// session's own subagents', those it, or one of them, ran: a sibling's
// subagent is the sibling's. reported holds the source ids
// ("agent-<agentId>") of every subagent those results report, held or
// not (all read only). A rewind's (not all) then looks before the point:
// subagentsRunningOn. A subagent's session that does not read is, for a
// diff (unread set), put in unread with why and passed over (its
// results, unread, report none); for a rewind (unread nil) it stops the
// reading: a *memberUnread, as what it wrote, and ran, is not known.
func (r *Rook) missingSubagents(id eventlog.ID, to uint64, fam importedFamily, all bool, unread map[eventlog.ID]error) (out []missingSubagent, reported map[string]bool, err error) {
	seen := map[string]bool{}
	reported = map[string]bool{}
	// scan reads session s's results from event from, those whose time
	// is when's: done once the first is found, unless all.
	scan := func(s eventlog.ID, from uint64, when func(time.Time) bool) (done bool, err error) {
		for {
			evs, err := r.Log.Read(s, from, 1024)
			if err != nil || len(evs) == 0 {
				return false, err
			}
			for _, ev := range evs {
				if ev.Kind != eventlog.KindToolResult || noSubagents[ev.Label] || when != nil && !when(ev.Time) {
					continue
				}
				reports, rerr := r.claudeSubagentReports(ev.Body, claudeTaskTools[ev.Label])
				if rerr != nil && claudeTaskTools[ev.Label] {
					out = append(out, missingSubagent{session: s, seq: ev.Seq, unread: rerr, label: ev.Label})
					if !all {
						return true, nil
					}
				}
				for _, sr := range reports {
					reported["agent-"+sr.agent] = true
					if fam.sources["agent-"+sr.agent] || sr.tools != nil && *sr.tools == 0 || seen[sr.agent] {
						continue
					}
					seen[sr.agent] = true
					out = append(out, missingSubagent{agent: sr.agent, session: s, seq: ev.Seq, path: r.subagentTranscript(fam, sr.agent)})
					if !all {
						return true, nil
					}
				}
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	if done, err := scan(id, to, nil); done || err != nil {
		return out, reported, err
	}
	// The family's subagents, each's metadata read once.
	subs := map[eventlog.ID]eventlog.Meta{}
	for _, o := range fam.members {
		if m, err := r.Log.ReadMeta(o); err == nil && isSubagent(m) {
			subs[o] = m
		}
	}
	var after func(time.Time) bool
	scanned := map[eventlog.ID]bool{}
	for more := true; more; {
		more = false
		for _, o := range fam.members {
			m, sub := subs[o]
			if scanned[o] || !sub {
				continue
			}
			// A diff (all) reads its own subagents alone (diffSubagents):
			// its children, and those its results, or theirs, report; a
			// sibling's subagent is the sibling's. A rewind counts what
			// every subagent of the family wrote after the point.
			if all && (m.Parent == nil || *m.Parent != fam.start) && !reported[childSourceID(m)] {
				continue
			}
			scanned[o], more = true, true
			if after == nil {
				if after, err = r.afterThePoint(id, to, fam); err != nil {
					return out, reported, err
				}
			}
			from, err := r.firstEventWhen(o, after)
			done := false
			if err == nil {
				done, err = scan(o, from, after)
			}
			switch {
			case err != nil && unread != nil:
				unread[o] = err
			case err != nil:
				return out, reported, &memberUnread{session: o, err: err}
			case done:
				return out, reported, nil
			}
		}
	}
	if all {
		return out, reported, nil
	}
	// A rewind's: those reported before the point that may have run on
	// after it (family_background.go), the session's own (by seq), then
	// those of its family's subagents (by time).
	ran, err := r.subagentsRunningOn(id, to, func(ev eventlog.Event) bool { return ev.Seq < to }, func(ev eventlog.Event) bool { return ev.Seq >= to }, fam, seen)
	if err != nil || len(ran) > 0 {
		return append(out, ran...), reported, err
	}
	var afterT, beforeT func(time.Time) bool
	for _, o := range fam.members {
		if _, sub := subs[o]; !sub {
			continue
		}
		if afterT == nil {
			if afterT, beforeT, err = r.pointSides(id, to, fam); err != nil {
				return out, reported, err
			}
		}
		ran, err := r.subagentsRunningOn(o, math.MaxUint64, func(ev eventlog.Event) bool { return beforeT(ev.Time) }, func(ev eventlog.Event) bool { return afterT(ev.Time) }, fam, seen)
		if err != nil {
			return out, reported, &memberUnread{session: o, err: err}
		}
		if len(ran) > 0 {
			return append(out, ran...), reported, nil
		}
	}
	return out, reported, nil
}

// missingSubagentRefusal is the refusal of a rewind of imported Claude
// Code session id to event to, whose family is fam, when a Task result at
// or after the point reports a subagent that no imported session linked
// to it holds; nil when there is none.
func (r *Rook) missingSubagentRefusal(id eventlog.ID, to uint64, fam importedFamily) error {
	miss, _, err := r.missingSubagents(id, to, fam, false, nil)
	if err != nil || len(miss) == 0 {
		return err
	}
	s := miss[0]
	when := " (at or after the point)"
	if s.why != "" {
		when = s.why
	}
	if s.unread != nil {
		if s.why == "" {
			when = ", at or after the point,"
		}
		return fmt.Errorf("cannot rewind the files: %s (%s)%s cannot be read (%v): which subagent it ran is not known, nor whether an imported session linked to it holds it, and a Claude Code subagent may have written the workspace's files: what it wrote is not known, so the files' states after the point may hold it; %s; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only",
			s.where(id, fam), s.unreadTaskWhat(), when, s.unread, r.unreadHowOf(s.session, s.unread))
	}
	what := fmt.Sprintf("cannot rewind the files: the Claude Code subagent %s, whose Task result is %s%s, is in no imported session linked to it: its session was removed from rook since (session rm), or its transcript was never imported, and it may have written the workspace's files: what it wrote is not known, so the files' states after the point may hold it", s.agent, s.where(id, fam), when)
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
