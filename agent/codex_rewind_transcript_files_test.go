package agent

import (
	"encoding/json"
	"testing"
)

// A Codex rewind's states are Changes marked transcript
// (codexRewindChanges): they are said in rollout_files alone. RewindWith's
// "transcript" list, built from st.First once the rollout's changes were
// in it, held them too: --json transcript_files listed them, with
// from_transcript 0.
func TestCodexRewindHasNoTranscriptFiles(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: a.txt\n+a0")
	s.patch("*** Update File: a.txt\n@@\n-a0\n+a1")
	r, id, seqs := s.imported(tree{"a.txt": "a1\n"})
	rw, err := r.Rewind(id, seqs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rw)
	if rw.FromTranscript != 0 || len(rw.TranscriptFiles) != 0 {
		t.Fatalf("from_transcript %d, transcript_files %+v (a Codex rewind has none):\n%s", rw.FromTranscript, rw.TranscriptFiles, b)
	}
}
