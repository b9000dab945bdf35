package cas

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// StatEntry answers from the index alone: what Stat says of an object's
// kind, sizes and place, with no read of its segment (Stat reads the
// record's header there, for Created, Codec and Dict).
func TestStatEntryReadsNoSegment(t *testing.T) {
	mem := vfs.NewMem()
	s, home := newStore(t, mem, Options{})
	ids := map[string]Key{
		"inline": mustPut(t, s, KindNote, []byte("tiny")),
		"packed": mustPut(t, s, KindMessage, bytes.Repeat([]byte("a message, packed with others "), 20)),
		"big":    mustPut(t, s, KindFile, noise(300<<10, 7)),
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r := reopen(t, s, false)
	var segReads atomic.Int64
	segs := filepath.Join(home, SegmentsDir) + string(filepath.Separator)
	mem.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRead && strings.HasPrefix(path, segs) {
			segReads.Add(1)
		}
		return nil
	})
	defer mem.SetHook(nil)
	for name, id := range ids {
		segReads.Store(0)
		got, err := r.StatEntry(id)
		if err != nil {
			t.Fatalf("%s: StatEntry: %v", name, err)
		}
		if n := segReads.Load(); n != 0 {
			t.Errorf("%s: StatEntry read the segment %d time(s)", name, n)
		}
		want, err := r.Stat(id)
		if err != nil {
			t.Fatalf("%s: Stat: %v", name, err)
		}
		if name != "inline" && segReads.Load() == 0 {
			t.Errorf("%s: Stat read no segment: the count above proves nothing", name)
		}
		if name != "inline" && want.Codec == CodecRaw && want.Created == 0 {
			t.Errorf("%s: Stat found no record header: %+v", name, want)
		}
		want.Created, want.Codec, want.Dict = 0, 0, 0
		if got != want {
			t.Errorf("%s: StatEntry %+v, want Stat's %+v without its header's fields", name, got, want)
		}
	}
	var nf *NotFoundError
	if _, err := r.StatEntry(Key{1, 2, 3}); !errors.As(err, &nf) {
		t.Errorf("StatEntry of a missing id: %v, want a NotFoundError", err)
	}
	r.Close()
	if _, err := r.StatEntry(ids["packed"]); !errors.Is(err, ErrClosed) {
		t.Errorf("StatEntry after Close: %v, want ErrClosed", err)
	}
}

// A writer's object not yet written has its kind and size already.
func TestStatEntryOfPendingObject(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	data := bytes.Repeat([]byte("pending "), 40)
	id := mustPut(t, s, KindMessage, data)
	got, err := s.StatEntry(id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Stat(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindMessage || got.Size != int64(len(data)) || got != want {
		t.Fatalf("pending object: StatEntry %+v, Stat %+v, want kind message and size %d", got, want, len(data))
	}
}
