package agent

import (
	"fmt"
	"math"
	"strings"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/eventlog"
)

// A subagent whose Task result came before the rewind point ran before
// it, but not one run in the background (an Agent call with
// run_in_background, the default in recent Claude Code): its result is
// its launch ("Async agent launched successfully..."), and it runs on,
// writing, after it. Claude Code tells the session it stopped with a
// message in the user's place, queued first (a queue-operation line
// written when it stops, then a user line, often isMeta, when it is
// given to the model):
//
//	<task-notification>
//	<task-id>a0b3dc735751c1f4f</task-id>
//	<tool-use-id>toolu_...</tool-use-id>
//	<output-file>.../tasks/a0b3dc735751c1f4f.output</output-file>
//	<status>completed</status>
//	<summary>Agent "..." completed</summary>
//	<result>...</result>
//	</task-notification>
//
// its task-id the agentId; completed, failed or killed (a stop: "was
// stopped"). No transcript in the corpus holds one of an agent (those
// there are of background shell commands, the same form); the form is
// that of public transcripts and of the tools that read them. A stopped
// agent runs again on a SendMessage to it ("resumed it in the background
// with your message": the call's input "to", the result's
// resumedAgentId), and is notified again when it stops; a notice is no
// proof it will not (anthropics/claude-code#92952: one re-invoked by its
// own background task, notified twice).
//
// So a missing subagent (in no imported session linked to the rewound
// one: family_subagents.go) reported before the point counts, as one
// reported after it does, when the transcript of the session that ran it
// leaves it running at the point (launched in the background, or started
// again, and no notice since that it stopped), or names it at or after
// the point (a notice of it, a SendMessage to it): it ran then. A notice
// is written twice: a queue-operation line (operation enqueue) when the
// agent stops, and a user line when the notice is given to the model,
// often hundreds of lines later (the corpus's marot-spotter 258c7280...:
// lines 280 and 496). The user line giving a stop notice already queued
// (the same task-id and status, queued and not yet given) is that notice
// again, no news of a run: given after the point, it does not say the
// agent ran then. One never seen queued, one saying it runs, or a
// SendMessage to it, at or after the point, still does. The
// transcript read is the one its result is in, as by then a notice comes
// to the session that launched it. What it does not hold (a notice lost,
// a session ended while the agent ran) leaves the agent running until
// the end, and the rewind refuses: rook cannot know what it wrote.

// stoppedStatuses are the statuses of a <task-notification> that say its
// agent stopped; another says nothing of it.
var stoppedStatuses = map[string]bool{"completed": true, "failed": true, "killed": true}

// agentRun is what the transcript says of a subagent's run, as read so
// far: running, and what the rewind's refusal says of it.
type agentRun struct {
	miss    missingSubagent
	running bool
	// ranAfter is the seq of an event at or after the point naming it
	// (a notice, a SendMessage); math.MaxUint64 when none is.
	ranAfter uint64
	// queued counts, by status, the stop notices of it queued and not
	// yet given to the model.
	queued map[string]int
}

// subagentsRunningOn are the subagents that session s's Task results
// before the point report (before, of an event), held by no imported
// session linked to the rewound one (fam) nor seen, that may have
// written at or after the point (after; an event neither is past a rook
// fork's line: lineEnd): running at the point, or named at or after it
// (agentRun). Each is added to seen. The reports are read up to seq end
// (the point, of the rewound session; of another, math.MaxUint64: its
// events are before the point by time).
func (r *Rook) subagentsRunningOn(s eventlog.ID, end uint64, before, after func(eventlog.Event) bool, fam importedFamily, seen map[string]bool) ([]missingSubagent, error) {
	runs := map[string]*agentRun{}
	var order []string
	var unread []missingSubagent
	from := uint64(math.MaxUint64)
	if err := r.eventsFrom(s, 0, func(ev eventlog.Event) bool {
		if ev.Seq >= end {
			return false
		}
		if ev.Kind != eventlog.KindToolResult || !claudeTaskTools[ev.Label] || !before(ev) {
			return true
		}
		reports, rerr := r.claudeSubagentReports(ev.Body, true)
		if rerr != nil {
			// It may have launched one in the background
			// (unreadTaskResult).
			unread = append(unread, missingSubagent{session: s, seq: ev.Seq, unread: rerr, label: ev.Label,
				why: ", before the point, where it may have launched a subagent in the background that ran on after it,"})
		}
		for _, sr := range reports {
			if fam.sources["agent-"+sr.agent] || seen[sr.agent] || runs[sr.agent] != nil {
				continue
			}
			runs[sr.agent] = &agentRun{miss: missingSubagent{agent: sr.agent, session: s, seq: ev.Seq}, ranAfter: math.MaxUint64}
			order = append(order, sr.agent)
			from = min(from, ev.Seq)
		}
		return true
	}); err != nil || len(unread) > 0 || len(runs) == 0 {
		return unread, err
	}
	// What the events from the first report on say of each run.
	if err := r.eventsFrom(s, from, func(ev eventlog.Event) bool {
		b, a := before(ev), after(ev)
		if !b && !a {
			return true // (past the line's end)
		}
		for _, n := range r.agentNews(ev) {
			run := runs[n.agent]
			if run == nil || ev.Seq < run.miss.seq {
				continue
			}
			if n.notice != noticeNone && !n.running {
				if run.queued == nil {
					run.queued = map[string]int{}
				}
				if n.notice == noticeQueued {
					run.queued[n.status]++
				} else if run.queued[n.status] > 0 {
					run.queued[n.status]-- // (given now: the one queued, no news)
					continue
				}
			}
			if a {
				run.ranAfter = min(run.ranAfter, ev.Seq)
			} else {
				run.running = n.running // (its report first: launched, or ended)
			}
		}
		return true
	}); err != nil {
		return nil, err
	}
	var out []missingSubagent
	for _, agent := range order {
		run := runs[agent]
		switch {
		case run.running:
			run.miss.why = ", before the point, where it ran on in the background (launched so, or started again by a SendMessage to it), and no notice that it stopped (a <task-notification> of it, completed, failed or killed) came before the point"
		case run.ranAfter != math.MaxUint64:
			run.miss.why = fmt.Sprintf(", before the point, and which that session's event #%d, at or after the point, says ran then (a notice of it, or a SendMessage to it)", run.ranAfter)
		default:
			continue
		}
		seen[agent] = true
		run.miss.path = r.subagentTranscript(fam, agent)
		out = append(out, run.miss)
	}
	return out, nil
}

// agentNote is one thing an event says of a subagent's run: of agent
// (its agentId), whether it runs (else it stopped); of a notice, its
// form (queued, or given to the model) and status.
type agentNote struct {
	agent   string
	running bool
	notice  noticeForm
	status  string
}

// noticeForm is how a line holds a <task-notification>: queued (a
// queue-operation enqueue line, written when the agent stops), given (a
// user line giving it to the model), or none of those (a queue-operation
// line of another operation; and the note of a Task result or of a
// SendMessage, which is no notice).
type noticeForm int

const (
	noticeNone noticeForm = iota
	noticeQueued
	noticeGiven
)

// agentNews is what event ev of an imported Claude Code session says of
// the runs of the subagents it names, in order: it runs (a Task result
// launching it in the background, a SendMessage to it, a notice whose
// status says no stop), or it stopped (a Task result that is its end, a
// notice of its stop).
func (r *Rook) agentNews(ev eventlog.Event) []agentNote {
	var news []agentNote
	switch {
	case ev.Kind == eventlog.KindToolResult && claudeTaskTools[ev.Label]:
		reports, _ := r.claudeSubagentReports(ev.Body, true) // (one that does not read is refused: subagentsRunningOn)
		for _, sr := range reports {
			news = append(news, agentNote{agent: sr.agent, running: sr.background})
		}
	case (ev.Kind == eventlog.KindToolCall || ev.Kind == eventlog.KindToolResult) && ev.Label == "SendMessage":
		lines, err := r.importedLines(ev.Body, nil)
		if err != nil {
			return nil
		}
		for _, line := range lines {
			for _, a := range claudeSendMessageAgents(trimNewline(line)) {
				news = append(news, agentNote{agent: a, running: true})
			}
		}
	case ev.Kind == eventlog.KindUser || ev.Kind == eventlog.KindNote && (ev.Label == "user:meta" || ev.Label == "queue-operation"):
		// (A notice's result may be long: a line past 1 MiB is passed
		// over, and its agent left running.)
		body, imported, err := r.readBodyWithin(ev.Body, 1<<20)
		if err != nil || !imported || !strings.Contains(string(body), "task-notification>") {
			return nil
		}
		for _, line := range sourceLines(body) {
			for _, n := range claudeTaskNotices(trimNewline(line)) {
				news = append(news, agentNote{agent: n.agent, running: !stoppedStatuses[n.status], notice: n.form, status: n.status})
			}
		}
	}
	return news
}

// taskNotice is a <task-notification> Claude Code wrote: its task-id and
// status, and the form of the line holding it.
type taskNotice struct {
	agent, status string
	form          noticeForm
}

// claudeTaskNotices reads the notices a line of a Claude Code transcript
// gives: a user line whose message (a string, or its text blocks) is one
// or more, or a queue-operation line whose content is.
func claudeTaskNotices(line []byte) []taskNotice {
	var l struct {
		Type      string          `json:"type"`
		Operation string          `json:"operation"`
		Content   json.RawMessage `json:"content"`
		Message   struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	var texts []string
	add := func(raw json.RawMessage) {
		var one string
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		switch {
		case len(raw) == 0:
		case json.Unmarshal(raw, &one) == nil:
			texts = append(texts, one)
		case json.Unmarshal(raw, &blocks) == nil:
			for _, b := range blocks {
				if b.Type == "text" {
					texts = append(texts, b.Text)
				}
			}
		}
	}
	switch l.Type {
	case "user":
		add(l.Message.Content)
	case "queue-operation":
		add(l.Content)
	}
	form := noticeGiven
	if l.Type == "queue-operation" {
		form = noticeNone
		if l.Operation == "enqueue" {
			form = noticeQueued
		}
	}
	var out []taskNotice
	for _, t := range texts {
		// Written in the user's place, it begins the text: one quoted in
		// a prompt names no run.
		t = strings.TrimSpace(t)
		if !strings.HasPrefix(t, "<task-notification>") {
			continue
		}
		for _, n := range strings.Split(t, "<task-notification>")[1:] {
			// Its head: what the agent reported (<result>) may quote
			// anything.
			n, _, _ = strings.Cut(n, "<result>")
			n, _, _ = strings.Cut(n, "</task-notification>")
			id, _ := tagText(n, "task-id")
			status, _ := tagText(n, "status")
			if id != "" {
				out = append(out, taskNotice{agent: id, status: status, form: form})
			}
		}
	}
	return out
}

// claudeSendMessageAgents are the agents a SendMessage call line (its
// input's "to") or result line (its toolUseResult's resumedAgentId)
// names.
func claudeSendMessageAgents(line []byte) []string {
	var l struct {
		ToolUseResult json.RawMessage `json:"toolUseResult"`
		Message       struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	var out []string
	var blocks []struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Input struct {
			To json.RawMessage `json:"to"`
		} `json:"input"`
	}
	if json.Unmarshal(l.Message.Content, &blocks) == nil {
		for _, b := range blocks {
			if to := rawString(b.Input.To); b.Type == "tool_use" && b.Name == "SendMessage" && to != "" {
				out = append(out, to)
			}
		}
	}
	var tr struct {
		Resumed json.RawMessage `json:"resumedAgentId"`
	}
	if len(l.ToolUseResult) > 0 && l.ToolUseResult[0] == '{' && json.Unmarshal(l.ToolUseResult, &tr) == nil {
		if a := rawString(tr.Resumed); a != "" {
			out = append(out, a)
		}
	}
	return out
}
