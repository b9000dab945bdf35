package agent

import (
	"bytes"
	"encoding/json"
	"errors"

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
// Token counts are estimates from body sizes (EstimateTokens), except
// TokensIn and TokensOut, which are what the log recorded.
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

	// Everything ever logged.
	EverEvents  int64
	EverBytes   int64
	EverTokens  int64
	Compactions int64

	// Reported is the context size recorded last, since the last
	// compaction: the input tokens of the newest event that recorded any
	// (for a model's turn, its prompt, cache reads included) plus its
	// output; nil when no event in context recorded tokens. It is as good
	// a guide as what the writer recorded. Imported sessions carry it from
	// their transcripts' usage, the model's own count: for them it is the
	// better guide, since the estimate counts each source line whole (its
	// JSON envelope, progress notes the model never saw).
	Reported *ReportedContext

	// MissingBodies counts events whose body the store could not describe
	// (missing or with a damaged index entry); they count as 0 bytes.
	MissingBodies int64
}

// ReportedContext is the context size an event recorded.
type ReportedContext struct {
	Seq    uint64
	Tokens uint64 // its tokens in + out
	// Window is the context window the event's lines recorded beside its
	// tokens (a Codex token_count's model_context_window), or 0.
	Window int64
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
	return c.percent(int64(c.Reported.Tokens))
}

func (c ContextReport) percent(tokens int64) float64 {
	if c.Usable <= 0 {
		return 0
	}
	return float64(tokens) * 100 / float64(c.Usable)
}

// OverThreshold reports whether the conversation is past the point where
// an agent compacts it.
func (c ContextReport) OverThreshold() bool { return c.InContextTokens > c.Threshold }

// ContextWindowSplit divides a window into the reserve for the answer, the
// usable rest, and the compaction threshold.
func ContextWindowSplit(window int64) (reserve, usable, threshold int64) {
	reserve = window / 10
	usable = window - reserve
	threshold = usable * 80 / 100
	return reserve, usable, threshold
}

// Context measures a session against a context window of `window`
// tokens. The conversation in context is replayed from the event after
// the last compaction (from the compaction itself when it is an imported
// line, which carries what was kept); everything before it was logged but
// is no longer in context. It reads the session's event records a page at
// a time and stats each distinct body once; it reads one body, the
// Reported event's when it is an imported line, for the window its
// transcript recorded.
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

	// What the store says of each distinct body, stat'ed once.
	type bodyStat struct {
		size     int64
		imported bool // a source line
		missing  bool // missing or undescribable: counts as 0 bytes
	}
	bodies := map[cas.Key]bodyStat{}
	var byKind [256]ContextKind
	reset := func() {
		byKind = [256]ContextKind{}
		rep.InContextEvents, rep.InContextBytes, rep.InContextTokens = 0, 0, 0
		rep.Reported = nil
	}
	var reportedBody cas.Key
	from := uint64(0)
	for {
		evs, err := r.Log.Read(id, from, contextPage)
		if err != nil {
			return ContextReport{}, err
		}
		for _, ev := range evs {
			b, ok := bodies[ev.Body]
			if !ok {
				info, err := r.Store.Stat(ev.Body)
				var nf *cas.NotFoundError
				var ce *cas.CorruptError
				switch {
				case err == nil:
					b = bodyStat{size: info.Size, imported: info.Kind == cas.KindSource}
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
			size := b.size
			tokens := EstimateTokens(size)
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
			if ev.TokensIn > 0 {
				rep.Reported = &ReportedContext{Seq: ev.Seq, Tokens: ev.TokensIn + ev.TokensOut}
				reportedBody = ev.Body
			}
			if ev.Kind == eventlog.KindCheckpoint {
				// A checkpoint's body is a manifest of captured files,
				// kept for diff and rewind; the model never sees it.
				continue
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
	if rep.Reported != nil && sum.Source != nil && sum.Source.Format == FormatCodex {
		if body, err := r.Body(eventlog.Event{Body: reportedBody}); err == nil {
			rep.Reported.Window = codexContextWindow(body)
		}
	}
	return rep, nil
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
			} `json:"payload"`
		}
		if json.Unmarshal(line, &l) == nil && l.Payload.Type == "token_count" && l.Payload.Info != nil && l.Payload.Info.Window > 0 {
			window = l.Payload.Info.Window
		}
	}
	return window
}
