package eventlog

import (
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestCreateMetaSyncDirFails: as for a fork (TestForkMetaSyncDirFails),
// a Create whose .meta was renamed into place and whose directory sync
// then failed fails with no session left: not to this writer, nor after
// a close, a kill or a power cut. It was there, an empty session Create
// had said it failed to make: run again, the command made a second.
func TestCreateMetaSyncDirFails(t *testing.T) {
	for _, how := range []string{"this writer", "close", "kill", "crash", "random crash"} {
		fsys := vfs.NewMem()
		l := testLog(t, fsys, Options{})
		failSyncDirAfterMeta(fsys, false)
		m, err := l.Create(Meta{Title: "t", Workspace: "/w"})
		fsys.SetHook(nil)
		if err == nil {
			t.Fatal("create with its directory sync failing: no error")
		}
		switch how {
		case "this writer":
			ss, err := l.Sessions()
			if _, merr := l.ReadMeta(m.ID); err != nil || len(ss) != 0 || merr == nil {
				t.Fatalf("%s: %d sessions (%v), its metadata read: %v", how, len(ss), err, merr == nil)
			}
			continue
		}
		states := statesAfter(t, how, fsys, l, 9)
		for i, st := range states {
			if n, there := sessionsAfter(t, st, m.ID); n != 0 || there {
				t.Fatalf("%s (%d): after recovery %d sessions, the one Create failed there: %v (Create said: %v)", how, i, n, there, err)
			}
		}
	}
	// The sync failing every time, the metadata cannot be removed for
	// sure: the error says so, naming the session.
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	failSyncDirAfterMeta(fsys, true)
	m, err := l.Create(Meta{Title: "t"})
	fsys.SetHook(nil)
	if err == nil || !strings.Contains(err.Error(), "the session "+m.ID.String()+" may be there now, or after a crash") || !strings.Contains(err.Error(), "`rook session rm "+m.ID.String()+"` removes it") {
		t.Fatalf("removal failing too: %v", err)
	}
}
