package cas

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// The rebuild marker, index/REBUILDING, tells a killed index rebuild from
// a first writer killed before its first commit: both leave an index of
// no commit beside segments that hold records. A writer writes it,
// durably, before it moves a damaged index aside (or puts a new one where
// it found none) to rebuild it from the segments, and removes it once the
// rebuilt index is committed in its place. A reader's verify that finds
// it beside an index of no commit, with no writer holding the lock,
// reports the rebuild as unfinished instead of passing a store whose
// objects it did not check. Stores from before the marker have none: a
// missing marker is what they always were (docs/storage.md, "Verify and
// reindex", says what a crash at each step leaves).

func rebuildMarkerPath(home string) string { return filepath.Join(home, IndexDir, RebuildMarker) }

// markRebuild writes the marker, through the durable-write helper, before
// the index is touched: failing, it has changed nothing.
func (s *Store) markRebuild() error {
	path := rebuildMarkerPath(s.home)
	line := fmt.Sprintf("started %s by pid %d (%s)\n", s.opts.Clock.Now().UTC().Format(time.RFC3339), os.Getpid(), s.opts.Command)
	if err := s.fs.WriteFileAtomic(path, []byte(line), FileMode); err != nil {
		return fmt.Errorf("write the index rebuild marker %s (the index is as it was): %w", path, err)
	}
	return nil
}

// rebuildMarked reads the marker of the store at home: whether it is
// there, and what it says (who started the rebuild, and when).
func rebuildMarked(fsys vfs.FS, home string) (bool, string, error) {
	b, err := vfs.ReadFile(fsys, rebuildMarkerPath(home))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, "", nil
	case err != nil:
		return false, "", fmt.Errorf("read the index rebuild marker %s: %w", rebuildMarkerPath(home), err)
	}
	return true, strings.TrimSpace(string(b)), nil
}

// unmarkRebuild removes the marker, when it is there, and makes that
// durable: the rebuilt index is committed in place. (Lost to a power cut,
// the marker is back beside an index that has a commit: readers pass it
// by, and the next writer removes it.)
func (s *Store) unmarkRebuild() error {
	path := rebuildMarkerPath(s.home)
	err := s.fs.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = s.fs.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("the index is rebuilt, but its rebuild marker %s could not be removed (%w): remove the file, or run the command again", path, err)
	}
	return nil
}

// finishRebuild runs at a writer's open of an index that opened: a marker
// beside an index of no commit is a rebuild a writer left unfinished
// (killed, or a power cut) after it put the empty index in place. The
// writer finishes it, as that one would have: a rebuild from the segments
// (a reindex's open leaves it to the reindex about to run). Beside an
// index that has a commit the marker is one whose removal did not reach
// the disk: the rebuilt index is in place, and the marker goes.
func (s *Store) finishRebuild() error {
	marked, what, err := rebuildMarked(s.fs, s.home)
	if err != nil {
		return fmt.Errorf("%w: the writer cannot tell whether a rebuild of the index was left unfinished: check the file's permissions, then run the command again", err)
	}
	if !marked {
		return nil
	}
	if s.tree.Snapshot().TxID() != 0 {
		return s.unmarkRebuild()
	}
	if s.opts.ForReindex {
		return nil
	}
	segs, err := s.listSegments()
	if err != nil {
		return err
	}
	rep, err := s.reindexLocked(nil)
	if err != nil {
		return fmt.Errorf("finish the index rebuild a writer left unfinished: %w", err)
	}
	s.Notices = append(s.Notices, fmt.Sprintf("index: a rebuild from the segments (%s) was left unfinished: rebuilt from %d segment(s), %d objects", what, len(segs), rep.Objects))
	return nil
}
