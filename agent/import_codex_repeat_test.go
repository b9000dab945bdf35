package agent

import (
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A token_count Codex writes again with the same usage (only its rate
// limits moved) counts no tokens: its event says 0 in, 0 out (--json), yet
// history, show, quote and export showed its usage as if counted
// ("[token_count] 100 in, 10 out", twice: 200 in read off the view, 100 in
// the totals). Every view of it now says it is a repeat, not counted; the
// token_count before it, which counted, reads as it did.
func TestCodexRepeatedTokenCountShowsAsNotCounted(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	count := func(at, total, last string) string {
		return `{"timestamp":"2026-03-02T10:00:0` + at + `Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":` + total +
			`,"last_token_usage":` + last + `,"model_context_window":128000},"rate_limits":{"primary":{"used_percent":` + at + `}}}}`
	}
	lines := []string{
		`{"timestamp":"2026-03-02T10:00:00Z","type":"session_meta","payload":{"id":"0199a1b2-0000-7000-8000-000000000002","cwd":"/w","source":"cli"}}`,
		`{"timestamp":"2026-03-02T10:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count my tokens"}]}}`,
		count("1", `{"input_tokens":100,"output_tokens":10}`, `{"input_tokens":100,"output_tokens":10}`),
		count("2", `{"input_tokens":100,"output_tokens":10}`, `{"input_tokens":100,"output_tokens":10}`), // the same again
		`{"timestamp":"2026-03-02T10:00:03Z","type":"event_msg","payload":{"type":"task_complete"}}`,
		count("4", `{"input_tokens":100,"output_tokens":10}`, `{"input_tokens":100,"output_tokens":10}`), // again, after a note
		count("5", `{"input_tokens":350,"output_tokens":40}`, `{"input_tokens":250,"output_tokens":30}`),
	}
	src := "/c/rollout-2026-03-02T10-00-00-0199a1b2-0000-7000-8000-000000000002.jsonl"
	writeSourceFile(t, fsys, src, []byte(strings.Join(lines, "\n")+"\n"))
	id := *fileByPath(t, mustImport(t, r, FormatCodex, src), src).Session
	s, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.TokensIn != 350 || s.TokensOut != 40 {
		t.Fatalf("tokens %d/%d, want 350/40", s.TokensIn, s.TokensOut)
	}
	const counted, repeat = "[token_count] 100 in, 10 out", "[token_count] repeat, not counted: 100 in, 10 out"
	evs, err := r.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	// Each event's view, as it counts: seq -> the token_count lines it
	// shows.
	want := map[uint64][]string{}
	for _, ev := range evs {
		switch {
		case ev.Label == codexTokenCountLabel && ev.TokensIn == 100:
			want[ev.Seq] = []string{counted}
		case ev.Label == codexTokenCountLabel && ev.TokensIn == 250:
			want[ev.Seq] = []string{"[token_count] 250 in, 30 out"}
		case ev.Label == codexTokenCountLabel+" +2" && ev.TokensIn == 0 && ev.TokensOut == 0:
			// Both repeats, the note between them: one event.
			want[ev.Seq] = []string{repeat, repeat}
		}
	}
	if len(want) != 3 {
		t.Fatalf("events %+v: want 3 with token_counts", evs)
	}
	hist, err := r.History(id, HistoryQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	show, err := r.Show(id, ShowQuery{Limit: 100, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	x, err := r.ExportRange(id, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		w, ok := want[ev.Seq]
		if !ok {
			continue
		}
		if got := hist.Events[i].Preview; !strings.HasPrefix(w[0], got) || got == "" {
			t.Errorf("history #%d (%s, %d in): %q, want %q", ev.Seq, ev.Label, ev.TokensIn, got, w[0])
		}
		q, err := r.Quote(id, ev.Seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, view := range []struct{ what, text string }{{"show", string(show.Events[i].Text)}, {"quote", string(q.Data)}, {"export", string(x.Events[i].Body)}} {
			var got []string
			for _, l := range strings.Split(view.text, "\n") {
				if strings.HasPrefix(l, "[token_count]") {
					got = append(got, l)
				}
			}
			if strings.Join(got, "|") != strings.Join(w, "|") {
				t.Errorf("%s #%d (%s, %d in): %q, want %q", view.what, ev.Seq, ev.Label, ev.TokensIn, got, w)
			}
		}
	}
}
