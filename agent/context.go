package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// DefaultContextWindow is the context window `session context` measures
// against unless told otherwise, in tokens.
const DefaultContextWindow = 200000

// contextPage is how many event records the context report reads at once.
const contextPage = 1024

// EstimateTokens is the token estimate of a body of n bytes: ceil(n/4).
func EstimateTokens(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}

// ContextKind is one kind's share of what is in context.
type ContextKind struct {
	Kind   eventlog.Kind
	Events int64
	Bytes  int64
	Tokens int64
}

// ContextReport is what a conversation costs against a context window.
// Token counts are estimates from body sizes (EstimateTokens), but for
// the images in imported lines, which count by their dimensions as the
// provider counts them (context_image.go), and TokensIn and TokensOut,
// which are what the log recorded. Bytes are as stored, images too.
type ContextReport struct {
	Session eventlog.Summary

	Window    int64 // the window, in tokens
	Reserve   int64 // kept back for the answer: a tenth of the window
	Usable    int64 // Window - Reserve
	Threshold int64 // compaction happens above this: 80% of Usable

	// What is in context: the events after the last compaction.
	ReplayFrom      uint64 // the first seq in context
	InContextEvents int64
	InContextBytes  int64
	InContextTokens int64
	Kinds           []ContextKind // in context, by kind, in kind order

	// Imported lines after the last compaction that the model never read
	// (progress, file-history snapshots, UI events: notes the agent wrote
	// for itself), left out of what is in context: they are most of a
	// Claude Code transcript's bytes.
	UnseenEvents int64
	UnseenBytes  int64
	UnseenTokens int64

	// RecordedWindow is the context window the transcript last recorded
	// (a Codex token_count's model_context_window, before the last
	// compaction if none came after it), or 0.
	RecordedWindow int64

	// Everything ever logged.
	EverEvents  int64
	EverBytes   int64
	EverTokens  int64
	Compactions int64

	// RolledBackTurns and RolledBackEvents: the user turns a rollback took
	// out of context since the last compaction (a Codex thread_rolled_back:
	// the user undid its last turns, which Codex no longer sends), and the
	// events of them that were in context.
	RolledBackTurns  int64
	RolledBackEvents int64

	// Reported is the context size recorded last, since the last
	// compaction: the input tokens of the newest event that recorded any
	// (for a model's turn, its prompt, cache reads included) plus its
	// output; nil when no event in context recorded tokens. It is as good
	// a guide as what the writer recorded. Imported sessions carry it from
	// their transcripts' usage, the model's own count: for them it is the
	// better guide, since the estimate counts each source line whole (its
	// JSON envelope too), and the threshold is judged by it.
	Reported *ReportedContext

	// MissingBodies counts events whose body the store could not describe
	// (missing or with a damaged index entry); they count as 0 bytes.
	MissingBodies int64
	// UnreadableBodies counts imported events whose lines the store
	// describes but cannot read back (a damaged or lost segment): they
	// count at the size the index gives, which leaves out the strings the
	// import cut from them (sourceLinesSize), so the report falls short.
	UnreadableBodies int64
}

// ReportedContext is the context size an event recorded.
type ReportedContext struct {
	Seq    uint64
	Tokens uint64 // its tokens in + out
	// Imported: the event is an imported line (of the session, or of the
	// imported session it is a fork of), so Tokens is the model's own
	// count, from the transcript's usage.
	Imported bool
	// After: events were appended in rook after it (a fork of an imported
	// session, continued), which it does not count.
	After bool
	// Window is the context window the event's lines recorded beside its
	// tokens (a Codex token_count's model_context_window), or 0.
	Window int64
}

// Count is Tokens as the int64 the estimates are, held at math.MaxInt64:
// a recorded count is any uint64 (a transcript's, --tokens-in), and one
// past it turned negative ("-0.3% of usable", never over the threshold).
func (p ReportedContext) Count() int64 { return int64(min(p.Tokens, math.MaxInt64)) }

// addTokens is a + b held at the largest count, never wrapped round to a
// small one.
func addTokens(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// SetWindow measures the report against another window.
func (c *ContextReport) SetWindow(window int64) {
	c.Window = window
	c.Reserve, c.Usable, c.Threshold = ContextWindowSplit(window)
}

// PercentOfUsable is the in-context share of the usable window, in percent.
func (c ContextReport) PercentOfUsable() float64 { return c.percent(c.InContextTokens) }

// ReportedPercentOfUsable is Reported's share of the usable window, in
// percent (0 without a report).
func (c ContextReport) ReportedPercentOfUsable() float64 {
	if c.Reported == nil {
		return 0
	}
	return c.percent(c.Reported.Count())
}

func (c ContextReport) percent(tokens int64) float64 {
	if c.Usable <= 0 {
		return 0
	}
	return float64(tokens) * 100 / float64(c.Usable)
}

// OverThreshold reports whether the conversation is past the point where
// an agent compacts it: by the model's own count when the transcript
// recorded one (ThresholdByReported); by the larger of that count and the
// estimate when events were appended in rook after it (the count leaves
// them out, the estimate may fall short of the model's count); else by the
// estimate.
func (c ContextReport) OverThreshold() bool { return c.ThresholdTokens() > c.Threshold }

// ThresholdTokens is the figure OverThreshold judges by.
func (c ContextReport) ThresholdTokens() int64 {
	switch p := c.Reported; {
	case c.ThresholdByReported():
		return p.Count()
	case p != nil && p.Imported && p.After:
		return max(p.Count(), c.InContextTokens)
	}
	return c.InContextTokens
}

// ThresholdByReported says whether OverThreshold judges by Reported: the
// model's own count, from an imported transcript's usage, which the
// estimate from stored bytes only approaches.
func (c ContextReport) ThresholdByReported() bool {
	return c.Reported != nil && c.Reported.Imported && !c.Reported.After
}

// ContextWindowSplit divides a window into the reserve for the answer, the
// usable rest, and the compaction threshold.
func ContextWindowSplit(window int64) (reserve, usable, threshold int64) {
	reserve = window / 10
	usable = window - reserve
	// 80% of usable, computed so that no window a flag or a transcript
	// gives (up to MaxInt64) overflows: usable*80 did past 1.15e17,
	// making the threshold 0 or negative, and every session "over" it.
	threshold = usable/100*80 + usable%100*80/100
	return reserve, usable, threshold
}

// Context measures a session against a context window of `window`
// tokens. The conversation in context is replayed from the event after
// the last compaction (from the compaction itself when it is an imported
// line, which carries what was kept); everything before it was logged but
// is no longer in context. Imported notes the model never read are left
// out of it (UnseenEvents). It reads the session's event records a page
// at a time and stats each distinct body once; it reads the bodies of the
// imported notes that merge lines of several labels (to tell the lines
// the model read from the others), and the Reported event's when it is a
// Codex line, for the window its transcript recorded.
func (r *Rook) Context(id eventlog.ID, window int64) (ContextReport, error) {
	if window <= 0 {
		return ContextReport{}, errors.New("the context window must be at least 1 token")
	}
	sum, err := r.Log.Summary(id)
	if err != nil {
		return ContextReport{}, err
	}
	rep := ContextReport{Session: sum}
	rep.SetWindow(window)
	// The format of the imported lines: a fork of an imported session
	// holds its parent's lines without a source of its own.
	format := ""
	codexFork := false // a Codex fork: its token_counts copied from its parent count none
	if im, ok := r.importedSession(sum.Meta); ok {
		format = im.Source.Format
		codexFork = format == FormatCodex && slices.Contains(im.Tags, forkTag)
	}

	// What the store says of each distinct body, stat'ed once.
	type bodyStat struct {
		size       int64
		imported   bool // a source line
		missing    bool // missing or undescribable: counts as 0 bytes
		unreadable bool // a source line that does not read: its stored size
		// images: of a source line, the bytes of size that are images'
		// strings, and what they count instead (context_image.go).
		imageBytes, imageTokens int64
	}
	bodies := map[cas.Key]bodyStat{}
	images := map[cas.Key]imageCount{} // cutImages's, by string
	var byKind [256]ContextKind
	// The last imported line that recorded tokens but counts none of its
	// own, copied from the session a fork was forked from (its parent
	// counts them): in a Claude Code fork a rook before this one
	// imported, a model's line; in a Codex fork, a token_count. And whether rook appended after it.
	var lastCopied *eventlog.Event
	afterCopied := false
	// The report as it was before each user turn since the last
	// compaction, for a rollback to go back to (codexRollback).
	type turnStart struct {
		byKind                      [256]ContextKind
		inEvents, inBytes, inTokens int64
		unEvents, unBytes, unTokens int64
		reported                    *ReportedContext
		reportedBody                cas.Key
		lastCopied                  *eventlog.Event
		afterCopied                 bool
	}
	var turns []turnStart
	var reportedBody cas.Key
	reset := func() {
		turns = nil
		lastCopied, afterCopied = nil, false
		byKind = [256]ContextKind{}
		rep.InContextEvents, rep.InContextBytes, rep.InContextTokens = 0, 0, 0
		rep.UnseenEvents, rep.UnseenBytes, rep.UnseenTokens = 0, 0, 0
		rep.Reported = nil
	}
	// recordsTokens: an imported line of a kind that records tokens, which
	// counts none when a fork copied it. Claude Code's model lines; of a
	// Codex fork, its token_counts (another session's token_count that
	// counts none repeats the count before it, or has none).
	recordsTokens := func(ev eventlog.Event) bool {
		if format == FormatCodex {
			return codexFork && ev.Label == codexTokenCountLabel
		}
		return ev.Kind == eventlog.KindAssistant || ev.Kind == eventlog.KindReasoning || ev.Kind == eventlog.KindToolCall
	}
	// The last line that recorded tokens, compaction or not: the window
	// is the model's, and a compaction does not change it.
	var lastTokensBody *cas.Key
	from := uint64(0)
	for {
		evs, err := r.Log.Read(id, from, contextPage)
		if err != nil {
			return ContextReport{}, err
		}
		for _, ev := range evs {
			if _, ok := SessionMemoryFile(ev); ok {
				continue // Claude Code's notes beside the transcript: not what the model read
			}
			if _, ok := ToolResultsFile(ev); ok {
				// A tool output Claude Code saved whole beside the
				// transcript (attachToolResults): the model read the
				// preview its line holds, not this.
				continue
			}
			b, ok := bodies[ev.Body]
			if !ok {
				info, err := r.Store.StatEntry(ev.Body)
				var nf *cas.NotFoundError
				var ce *cas.CorruptError
				switch {
				case err == nil:
					b = bodyStat{size: info.Size, imported: info.Kind == cas.KindSource}
					if b.imported {
						// The model read the lines whole: with the strings
						// the import cut out of them (a prompt, a tool's
						// output, a file), which the object leaves out.
						ls, ok := r.sourceLinesSize(ev.Body, info.Size, images)
						b.size, b.imageBytes, b.imageTokens = ls.size, ls.imageBytes, ls.imageTokens
						b.unreadable = !ok
					}
				case errors.As(err, &nf), errors.As(err, &ce):
					b.missing = true
				default:
					return ContextReport{}, err
				}
				bodies[ev.Body] = b
			}
			if b.missing {
				rep.MissingBodies++
			}
			if b.unreadable {
				rep.UnreadableBodies++
			}
			size := b.size
			tokens := EstimateTokens(size-b.imageBytes) + b.imageTokens
			rep.EverEvents++
			rep.EverBytes += size
			rep.EverTokens += tokens
			if ev.Kind == eventlog.KindCompaction {
				rep.Compactions++
				rep.ReplayFrom = ev.Seq + 1
				reset()
				if !b.imported {
					continue
				}
				// An imported compaction's line is in context: a Codex
				// compacted line holds the history kept in its place (a
				// Claude Code compact boundary is one short line).
				rep.ReplayFrom = ev.Seq
			}
			if format == FormatCodex && b.imported {
				switch {
				case ev.Kind == eventlog.KindUser:
					t := turnStart{byKind: byKind, inEvents: rep.InContextEvents, inBytes: rep.InContextBytes, inTokens: rep.InContextTokens,
						unEvents: rep.UnseenEvents, unBytes: rep.UnseenBytes, unTokens: rep.UnseenTokens,
						reportedBody: reportedBody, lastCopied: lastCopied, afterCopied: afterCopied}
					if rep.Reported != nil {
						c := *rep.Reported
						t.reported = &c
					}
					turns = append(turns, t)
				case ev.Label == codexRollbackLabel && len(turns) > 0:
					// Codex drops the last num_turns user turns from the
					// history it sends (all of them, if there are fewer):
					// back to the report before the first of them.
					var n int64
					if body, err := r.Body(ev); err == nil {
						n = min(int64(len(turns)), codexRolledBackTurns(body))
					}
					if n > 0 {
						t := turns[int64(len(turns))-n]
						turns = turns[:int64(len(turns))-n]
						rep.RolledBackTurns += n
						rep.RolledBackEvents += rep.InContextEvents - t.inEvents
						byKind = t.byKind
						rep.InContextEvents, rep.InContextBytes, rep.InContextTokens = t.inEvents, t.inBytes, t.inTokens
						rep.UnseenEvents, rep.UnseenBytes, rep.UnseenTokens = t.unEvents, t.unBytes, t.unTokens
						rep.Reported, reportedBody, lastCopied, afterCopied = t.reported, t.reportedBody, t.lastCopied, t.afterCopied
					}
				}
			}
			switch {
			case ev.TokensIn > 0:
				rep.Reported = &ReportedContext{Seq: ev.Seq, Tokens: addTokens(ev.TokensIn, ev.TokensOut), Imported: b.imported}
				reportedBody = ev.Body
				if b.imported {
					body := ev.Body
					lastTokensBody = &body
				}
			case ev.TokensOut > 0 && b.imported && rep.Reported != nil && rep.Reported.Imported:
				// A later line of the API message the count came from:
				// Claude Code repeats a message's usage on each of its
				// lines, the output growing, and the import gives a line
				// only what it adds (its input was counted on the first).
				// The message's last record is its whole count.
				rep.Reported.Seq = ev.Seq
				rep.Reported.Tokens = addTokens(rep.Reported.Tokens, ev.TokensOut)
				reportedBody = ev.Body
			case !b.imported && ev.Kind != eventlog.KindCheckpoint && rep.Reported != nil:
				// Appended in rook after the count (a fork of an imported
				// session, continued): the count no longer covers all.
				rep.Reported.After = true
			}
			switch {
			case b.imported && ev.TokensIn == 0 && ev.TokensOut == 0 && recordsTokens(ev):
				e := ev
				lastCopied, afterCopied = &e, false
			case !b.imported && ev.Kind != eventlog.KindCheckpoint:
				afterCopied = true
			}
			if ev.Kind == eventlog.KindCheckpoint {
				// A checkpoint's body is a manifest of captured files,
				// kept for diff and rewind; the model never sees it.
				continue
			}
			if ev.Kind == eventlog.KindNote && b.imported {
				seen, err := r.seenShare(format, ev, size)
				if err != nil {
					return ContextReport{}, err
				}
				rep.UnseenBytes += size - seen
				rep.UnseenTokens += EstimateTokens(size - seen)
				if seen == 0 {
					rep.UnseenEvents++
					continue
				}
				if seen < size {
					size, tokens = seen, EstimateTokens(seen)
				}
			}
			k := &byKind[ev.Kind]
			k.Kind = ev.Kind
			k.Events++
			k.Bytes += size
			k.Tokens += tokens
			rep.InContextEvents++
			rep.InContextBytes += size
			rep.InContextTokens += tokens
		}
		if len(evs) < contextPage {
			break
		}
		from = evs[len(evs)-1].Seq + 1
	}
	for _, k := range eventlog.Kinds {
		if byKind[k].Events > 0 {
			rep.Kinds = append(rep.Kinds, byKind[k])
		}
	}
	if rep.Reported == nil && lastCopied != nil && format == FormatClaudeCode {
		// A Claude Code fork with no reply of its own yet, imported by a
		// rook that stored its copied lines counting no tokens (the
		// parent spent them): the usage they recorded is still the
		// model's own count of the context.
		if body, err := r.Body(*lastCopied); err == nil {
			if tokens, ok := claudeRecordedTokens(body); ok {
				rep.Reported = &ReportedContext{Seq: lastCopied.Seq, Tokens: tokens, Imported: true, After: afterCopied}
			}
		}
	}
	if rep.Reported == nil && lastCopied != nil && codexFork {
		// A Codex fork with no turn of its own yet: the token_counts it
		// copied count no tokens either, but the last still records the
		// usage of the turn it closed, the context the fork starts from.
		if body, err := r.Body(*lastCopied); err == nil {
			if tokens, ok := codexRecordedTokens(body); ok {
				rep.Reported = &ReportedContext{Seq: lastCopied.Seq, Tokens: tokens, Imported: true, After: afterCopied}
				reportedBody = lastCopied.Body
			}
		}
	}
	if format == FormatCodex {
		if rep.Reported != nil && rep.Reported.Imported {
			if body, err := r.Body(eventlog.Event{Body: reportedBody}); err == nil {
				rep.Reported.Window = codexContextWindow(body)
				rep.RecordedWindow = rep.Reported.Window
			}
		}
		if rep.RecordedWindow == 0 && lastTokensBody != nil {
			// No count since the last compaction: the one before it.
			if body, err := r.Body(eventlog.Event{Body: *lastTokensBody}); err == nil {
				rep.RecordedWindow = codexContextWindow(body)
			}
		}
	}
	return rep, nil
}

// codexRollbackLabel labels a thread_rolled_back event (eventMsg): the
// user undid the last turns of the thread.
const codexRollbackLabel = "event_msg:thread_rolled_back"

// codexRolledBackTurns is how many turns the thread_rolled_back lines of
// body undo: {"type":"event_msg","payload":{"type":"thread_rolled_back",
// "num_turns":N}} (ThreadRolledBackEvent in codex-rs/protocol).
func codexRolledBackTurns(body []byte) int64 {
	var n int64
	for _, line := range bytes.Split(body, []byte("\n")) {
		var l struct {
			Payload struct {
				Type     string `json:"type"`
				NumTurns int64  `json:"num_turns"`
			} `json:"payload"`
		}
		if json.Unmarshal(entryBytes(line), &l) == nil && l.Payload.Type == "thread_rolled_back" && l.Payload.NumTurns > 0 {
			n += l.Payload.NumTurns
		}
	}
	return n
}

// claudeRecordedTokens is the context size the last line of body with a
// usage recorded (Claude Code repeats a message's usage on each of its
// lines, the output growing: the last is the whole): its input, cache
// reads and writes included, and its output.
func claudeRecordedTokens(body []byte) (uint64, bool) {
	lines := bytes.Split(bytes.TrimRight(body, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		// Past a byte order mark or a crash's NULs, as the import read
		// the line (entryBytes).
		e, err := decodeClaudeEntry(entryBytes(lines[i]))
		if err != nil || e.Usage == nil {
			continue
		}
		t := e.Usage.tokens()
		return t.in + t.out, true
	}
	return 0, false
}

// codexRecordedTokens is the usage the last token_count line of body with
// one recorded, as the import counts a token_count's (its turn's input
// and output), when it records any.
func codexRecordedTokens(body []byte) (uint64, bool) {
	lines := bytes.Split(bytes.TrimRight(body, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		e, err := decodeCodexEntry(entryBytes(lines[i]))
		if err != nil || e.Type != "event_msg" || e.PType != "token_count" || !e.Tokens.OK {
			continue
		}
		if t := e.Tokens.In + e.Tokens.Out; t > 0 {
			return t, true
		}
	}
	return 0, false
}

// seenNotes are the labels of the imported notes the model reads, by
// format: Claude Code's meta prompts (a skill's or a command's
// instructions) and the summary after a compaction; Codex's developer and
// system messages, the user messages it wrote itself (the environment,
// AGENTS.md, a skill: codexContextLabel), and mail between agents in the
// model's history (an agent_message item, sent to the model as a
// message). Every other note
// (progress, snapshots, system lines, UI events, metadata) is what the
// agent kept for itself.
var seenNotes = map[string]map[string]bool{
	FormatClaudeCode: {"user:meta": true, "user:compact-summary": true},
	FormatCodex:      {"developer": true, "system": true, codexContextLabel: true, "response_item:agent_message": true},
}

// linesSize is what sourceLinesSize measures of a source line object.
type linesSize struct {
	size int64
	// imageBytes of size are the strings of images (their base64), which
	// count imageTokens, not a quarter of their bytes.
	imageBytes, imageTokens int64
}

// sourceLinesSize is the size of the lines a source line object holds,
// the strings cut out of them put back (as their decoded text and quotes:
// an estimate's measure, not the exact bytes of their escapes; one the
// line holds twice, once), read off
// the object's head and the store's sizes of the strings, none of them
// read but those that sit where an image does (mayBeImage) or are a
// tool's output (outputKeys), to tell an image (counted by its
// dimensions) from text, and images its rest kept (restImages); stored,
// the object's own size, and ok false when it cannot be
// read, or a string cut out of it cannot be described (Context counts it
// in UnreadableBodies: the size falls short). images caches what
// cutImages read, by string.
func (r *Rook) sourceLinesSize(id cas.Key, stored int64, images map[cas.Key]imageCount) (ls linesSize, ok bool) {
	b, err := r.Store.Get(id)
	if err != nil {
		return linesSize{size: stored}, false
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return linesSize{size: stored}, false
	}
	ok = true
	ls.size = int64(len(sl.Rest))
	at := 0 // where the cut is in rest
	for i, c := range sl.Cuts {
		at += c.Gap
		// A string the line holds twice counts once: Claude Code writes
		// a tool's output in the message the model reads and again in
		// toolUseResult, for its own view (an image a Read returned, too).
		if slices.ContainsFunc(sl.Cuts[:i], func(p lineCut) bool { return p.ID == c.ID }) {
			continue
		}
		info, err := r.Store.StatEntry(c.ID)
		if err != nil {
			ok = false
			continue
		}
		ls.size += info.Size + 2
		if img, isImage := r.cutImages(c.ID, info.Size, sl.Rest, at, images); isImage {
			ls.imageBytes += img.bytes
			ls.imageTokens += img.tokens
		}
	}
	img := restImages(sl.Rest)
	ls.imageBytes += img.bytes
	ls.imageTokens += img.tokens
	return ls, ok
}

// seenShare is how many of the size bytes an imported note's event
// counts in context: all or none for the lines of one label, and for a
// run of lines of several labels merged into one event (an import merges
// consecutive notes: "progress +2"), the share of its lines the model
// read, by their length.
func (r *Rook) seenShare(format string, ev eventlog.Event, size int64) (int64, error) {
	label, mixed := noteLabel(ev.Label)
	if !mixed {
		if seenNotes[format][label] {
			return size, nil
		}
		return 0, nil
	}
	if len(seenNotes[format]) == 0 {
		return 0, nil
	}
	body, err := r.Body(ev)
	var nf *cas.NotFoundError
	var ce *cas.CorruptError
	if errors.As(err, &nf) || errors.As(err, &ce) {
		return 0, nil // counted as unreadable already (sourceLinesSize read it first)
	} else if err != nil {
		return 0, err
	}
	m := newMapper(format, "")
	var seen, all int
	for _, line := range bytes.Split(bytes.TrimRight(body, "\n"), []byte("\n")) {
		all += len(line) + 1
		if seenNotes[format][m.mapLine(line).Label] {
			seen += len(line) + 1
		}
	}
	if all == 0 {
		return 0, nil
	}
	return size * int64(seen) / int64(all), nil
}

// noteLabel is the label of an imported note's lines, and whether its
// event merges lines of several labels ("progress:x +2"; a run of one
// label is "progress:x ×3", see mergedLine).
func noteLabel(label string) (string, bool) {
	i := strings.LastIndexByte(label, ' ')
	if i < 0 {
		return label, false
	}
	n := label[i+1:]
	switch {
	case strings.HasPrefix(n, "×"):
		n = n[len("×"):]
	case strings.HasPrefix(n, "+"):
		n = n[1:]
	default:
		return label, false
	}
	if _, err := strconv.ParseUint(n, 10, 32); err != nil {
		return label, false
	}
	return label[:i], label[i+1] == '+'
}

// ImportedFrom is the source of a session's imported lines: its own, or,
// for a fork (or rewind) of an imported session, which holds its parent's
// lines up to the fork, its parent's (once that is removed, a Source
// that names only the format: removedImportedAncestor); nil for a native
// session.
func (r *Rook) ImportedFrom(m eventlog.Meta) *eventlog.Source {
	if im, ok := r.importedSession(m); ok {
		return im.Source
	}
	return nil
}

// importedSession is the imported session whose lines a session holds (see
// ImportedFrom): itself, or the one it was forked from in rook; ok is
// false for a native session.
func (r *Rook) importedSession(m eventlog.Meta) (eventlog.Meta, bool) {
	if im, _, _, ok := r.ImportedAncestor(m); ok {
		return im, true
	}
	return r.removedImportedAncestor(m)
}

// removedImportedAncestor stands in for the imported session a fork's
// lines come from when it, or a fork between them, was removed (session
// rm, retention): the fork keeps its copy of the lines, but without this
// its diff and rewind no longer read the transcript's edit results (it
// "captured no files"), nor its context the lines' format. What they are
// is then said by the format tag the fork took with them (a fork's tags
// default to its parent's; an import tags a session with its format),
// once its copy shows the lines were imported (copiesImportedLines: the
// session's own copy of the events it holds, as many as the lowest fork
// point on the way, none for a fork at 0): a tag is free text, and a
// native session tagged "codex" is no import. It
// is a Meta with the tags of the last session of the chain still there
// and a Source that names only the format. ok is false for a native
// session, one whose copy says nothing of an import (it cannot be known
// to be one, and is not taken for one), or a chain broken by metadata
// that does not read. The walk follows each fork's ForkedFrom, as
// ImportedAncestor's.
func (r *Rook) removedImportedAncestor(m eventlog.Meta) (eventlog.Meta, bool) {
	start, held := m.ID, uint64(math.MaxUint64)
	for seen := map[eventlog.ID]bool{}; !seen[m.ID]; { // as ImportedAncestor
		seen[m.ID] = true
		if m.Source != nil {
			break
		}
		pid, at, ok := m.ForkedFrom()
		if !ok {
			break
		}
		// held: how many of the removed ancestor's events the session
		// asked about holds, the lowest fork point on the way; its own
		// copy of them is what is asked.
		held = min(held, at)
		pm, err := r.Log.ReadMeta(pid)
		if errors.Is(err, eventlog.ErrNoSession) {
			for _, f := range []string{FormatClaudeCode, FormatCodex} {
				if slices.Contains(m.Tags, f) && r.copiesImportedLines(start, held) {
					return eventlog.Meta{ID: m.ID, Tags: m.Tags, Source: &eventlog.Source{Format: f}}, true
				}
			}
			break
		}
		if err != nil {
			break
		}
		m = pm
	}
	return eventlog.Meta{}, false
}

// importedLinesLook is how many of the events a fork copied
// copiesImportedLines reads at most for an imported line.
const importedLinesLook = 64

// copiesImportedLines says whether session id's copy of the first at
// events of the session it was forked from holds an imported line: an
// event whose body the store keeps as a line of a transcript
// (cas.KindSource) and that decodes as one, as an import stores each
// line it takes in and nothing else does (`rook store put` does not take
// the kind). It is what is left of an import once the imported
// session is removed. The first importedLinesLook of them are looked at
// (an imported session begins with its lines); a body that does not
// stat, or an event past damage, says nothing.
func (r *Rook) copiesImportedLines(id eventlog.ID, at uint64) bool {
	if at == 0 {
		return false // it copied none
	}
	// At damage, the events before it.
	evs, _ := r.Log.Read(id, 0, int(min(at, importedLinesLook)))
	for _, ev := range evs {
		if ev.Seq >= at {
			break
		}
		if info, err := r.Store.StatEntry(ev.Body); err == nil && info.Kind == cas.KindSource && r.readsAsSourceLine(ev.Body) {
			return true
		}
	}
	return false
}

// readsAsSourceLine says whether object id, of kind source, is taken for
// a source line: false when it reads back intact and does not decode as
// one. An older rook's `rook store put --kind source` stored any bytes
// under that kind, and a native event's body of the same bytes is that
// object: no proof of an import. One that does not read back (damage)
// is taken by its kind.
func (r *Rook) readsAsSourceLine(id cas.Key) bool {
	b, err := r.Store.Get(id)
	if err != nil {
		return true
	}
	_, err = decodeSourceLine(b)
	return err == nil
}

// ImportedAncestor is the imported session whose lines m holds (see
// ImportedFrom), the session forked from it on the way there (m itself,
// or a fork further down: m is a fork of a fork), and how many of its
// first events that fork's copy holds; fork is zero when m was imported
// itself. The walk follows each fork's ForkedFrom: its parent, or, once
// that was removed, the session its removal recorded as the one its copy
// came from (Meta.Ancestor), as session diff and rewind do, so that a
// fork of a fork of an imported session still there is that session's
// after the fork between them is removed. ok is false for a native
// session, one whose ancestors cannot be read, or a fork that holds none
// of the imported session's lines (a fork point of 0 on the way: a fork
// at 0, or a fork at 0 of a fork of it), as removedImportedAncestor
// reads it once that session is removed: a fresh session, whose verdict
// does not change when another session is removed. `rook export` says
// from it which file a fork's lines come from and how far.
func (r *Rook) ImportedAncestor(m eventlog.Meta) (imported, fork eventlog.Meta, at uint64, ok bool) {
	// Forks of forks, however many; a loop (metadata damaged: a session
	// its own ancestor) ends the walk, as not imported.
	for seen := map[eventlog.ID]bool{}; !seen[m.ID]; {
		seen[m.ID] = true
		if m.Source != nil {
			return m, fork, at, true
		}
		pid, pat, ok := m.ForkedFrom()
		if !ok || pat == 0 {
			break
		}
		pm, err := r.Log.ReadMeta(pid)
		if err != nil {
			break
		}
		fork, at, m = m, pat, pm
	}
	return eventlog.Meta{}, eventlog.Meta{}, 0, false
}

// codexContextWindow is the model_context_window the last token_count
// line of body recorded, or 0.
func codexContextWindow(body []byte) int64 {
	var window int64
	for _, line := range bytes.Split(body, []byte("\n")) {
		var l struct {
			Payload struct {
				Type string `json:"type"`
				Info *struct {
					Window int64 `json:"model_context_window"`
				} `json:"info"`
				// An older Codex's, with no info: in the payload itself.
				Window int64 `json:"model_context_window"`
			} `json:"payload"`
		}
		if json.Unmarshal(entryBytes(line), &l) != nil || l.Payload.Type != "token_count" {
			continue
		}
		if w := l.Payload.Window; l.Payload.Info == nil && w > 0 {
			window = w
		} else if l.Payload.Info != nil && l.Payload.Info.Window > 0 {
			window = l.Payload.Info.Window
		}
	}
	return window
}
