package cas

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/internal/vfs"
)

// TestIDRecordFailureDoesNotBlockAWriter: recording an old store's highest
// dictionary id at a writer's open can fail (a full disk); the writer still
// opens (gc must be able to free space), saying so, and training records
// the id itself first.
func TestIDRecordFailureDoesNotBlockAWriter(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	first := trainMessages(t, s, 0, 0, 400)
	s.Close()
	rec := filepath.Join(home, DictDir, dict.HighestFile)
	if err := fsys.Remove(rec); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRename && path == rec {
			return errors.New("no space left on device")
		}
		return nil
	})
	s, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatalf("writer open with the record failing: %v", err)
	}
	if len(s.Notices) != 1 || !strings.Contains(s.Notices[0], "no space left on device") {
		t.Fatalf("notices %q", s.Notices)
	}
	// Training records the id before it writes a dictionary.
	for i := 0; i < 800; i++ {
		mustPut(t, s, KindMessage, shaped(1, i))
	}
	fsys.SetHook(nil)
	res, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}, Samples: 200})
	if err != nil || !res[0].Kept || res[0].DictID != first+1 {
		t.Fatalf("train after the failed record: %v %+v", err, res)
	}
	s.Close()
	b, err := vfs.ReadFile(fsys, rec)
	if hi, derr := dict.DecodeHighest(b); err != nil || derr != nil || hi != first+1 {
		t.Fatalf("recorded %d (%v %v)", hi, err, derr)
	}
}
