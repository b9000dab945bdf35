package agent

import (
	"path/filepath"
	"strings"
	"testing"
)

// A background subagent's <task-notification> is queued when it stops
// (a queue-operation enqueue line, written then) and given to the model
// later (a user line holding the same notice), often many lines later:
// in the corpus (marot-spotter 258c7280...), line 280 queues it and line
// 496 delivers it. A rewind to a point between the two is to after the
// subagent stopped (the queue-operation line, before the point, says
// so): its transcript is not needed, as when the notice is wholly before
// the point. The delivery after the point is the same notice, not news
// that it ran then; the rewind refused, naming the subagent as one that
// "ran then", and, its transcript being gone, only --keep-files got past
// it.
func TestRewindFamilyBackgroundNoticeQueuedBeforeGivenAfter(t *testing.T) {
	r, e, parent, sub := claudeBackground(t, false, notices("queued", "completed"), notices("user", "completed"))
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	to := eventOf(t, r, parent, `"content":"again"`)
	queued := eventOf(t, r, parent, `"queue-operation"`)
	if queued >= to {
		t.Fatalf("test setup: the queue-operation line (#%d) is not before the point (#%d)", queued, to)
	}
	_, err := r.Rewind(parent, to, false)
	if err != nil {
		t.Fatalf("rewind to %d (after the queue-operation line #%d saying a1b2c3d completed; the same notice delivered to the model after the point): %v\nwant the rewind to go: the subagent stopped before the point, and its delivery later is no run", to, queued, err)
	}
	got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt"))
	if !strings.HasPrefix(got, "A1\n") {
		t.Fatalf("files after the rewind: %q, want a.txt put back (A1)", got)
	}
}

// Only the delivery of a stop notice already queued, and not yet given,
// is passed over: a second notice given after the point (never queued),
// one of another status than the one queued, a notice saying the agent
// runs, or a SendMessage to it after the point, say it ran then; and the
// delivery of a notice queued before a SendMessage that started it again
// is no news that it stopped since. Each refuses, naming it.
func TestRewindFamilyBackgroundNoticeQueuedOnlyItsDeliveryPassedOver(t *testing.T) {
	then := func(fs ...func(e *editTranscript) []string) func(e *editTranscript) []string {
		return func(e *editTranscript) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f(e)...)
			}
			return out
		}
	}
	queued, given := notices("queued", "completed"), notices("user", "completed")
	for _, c := range []struct {
		name     string
		mid, end func(e *editTranscript) []string
		refused  bool
	}{
		{"queued and given before the point", then(queued, given), nil, false},
		{"queued and given as meta after the point", queued, notices("meta", "completed"), false},
		{"given twice after the point", queued, then(given, given), true},
		{"given with another status", queued, notices("user", "failed"), true},
		{"running queued before, given after", notices("queued", "running"), notices("user", "running"), true},
		{"resumed after the point", queued, then(given, sendMessage), true},
		{"resumed before the point, the queued one given after", then(queued, sendMessage), given, true},
		{"resumed before the point, the queued one given before", then(queued, sendMessage, given), nil, true},
		{"resumed, queued and given again", then(queued, given, sendMessage, queued), given, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rewindWithoutBackground(t, false, c.mid, c.end, c.refused)
		})
	}
}
